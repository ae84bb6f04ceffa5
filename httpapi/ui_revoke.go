package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/go-kit/log/level"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The status page's revoke button and history table. POST /v1/revoke takes
// a JSON body and the admin token in an Authorization header, which no HTML
// form can send; POST /ui/revoke is its twin for the page's forms, and
// calls the same lease.Revoker. It needs all of:
//
//   - a session signed in with the admin token (ui_session.go); the clients'
//     token signs in as a viewer, whose revoke is refused (403) and changes
//     nothing;
//   - the session's form token in the form (csrf), so a page elsewhere that
//     makes the browser post the form is refused even where SameSite and
//     the Origin check let it through;
//   - a server whose admin token is set and differs from the clients'
//     (adminReady, as for /v1/revoke).
//
// The form names the token the page showed, so a click on a page rendered
// before the name changed hands does not revoke the new holder: the store
// answers not found.

// uiHistoryRows is how many events the page shows, newest first.
const uiHistoryRows = 20

// adminHash is the SHA-256 of the admin token; nil: none.
func (s *Server) adminHash() *[sha256.Size]byte {
	if s.adminReady() != nil {
		return nil
	}
	return s.admin
}

// recentHistory reads the latest events of the store's history, newest
// first. It reports false when the store keeps none.
func (s *Server) recentHistory(ctx context.Context, d *uiStatusData) (bool, []uiEvent) {
	hr, ok := s.store.(lease.HistoryReader)
	if !ok {
		return false, nil
	}
	page, err := hr.History(ctx, lease.HistoryRequest{Newest: true, Limit: uiHistoryRows})
	if err != nil {
		d.Problems = append(d.Problems, "history: "+err.Error())
		return true, nil
	}
	out := make([]uiEvent, 0, len(page.Events))
	for _, e := range page.Events {
		reason := e.Reason
		if e.By != "" {
			if reason != "" {
				reason += " "
			}
			reason += "(by " + e.By + ")"
		}
		out = append(out, uiEvent{Time: e.Time.UTC().Format("2006-01-02 15:04:05.000"), Kind: string(e.Kind),
			Name: e.Name, Token: uint64(e.Token), Owner: e.Owner, Reason: reason})
	}
	return true, out
}

// uiRevoke answers POST /ui/revoke: name, token (the lease's, as the page
// showed it), reason (optional) and csrf. Done, it sends the browser back
// to the page (303), where the history shows the revoke.
func (s *Server) uiRevoke(w http.ResponseWriter, r *http.Request) error {
	u := s.uiSessionOf(r)
	if err := s.adminReady(); err != nil {
		return s.uiMessage(w, r, http.StatusForbidden, "Refused", "Revoking is off on this server: "+err.Error())
	}
	if u.role != roleAdmin {
		return s.uiMessage(w, r, http.StatusForbidden, "Refused", "Revoking a lease needs the admin token: sign out and sign in with it (-admin-token-file).")
	}
	if !s.ui.checkForm(u, r.PostForm.Get("csrf")) {
		return s.uiMessage(w, r, http.StatusForbidden, "Refused", "The form token is missing or wrong: reload the page and try again.")
	}
	rv, ok := s.store.(lease.Revoker)
	if !ok {
		return s.uiMessage(w, r, http.StatusMethodNotAllowed, "Not possible", "This store cannot revoke.")
	}
	req := lease.RevokeRequest{Name: r.PostForm.Get("name"), Reason: r.PostForm.Get("reason"), By: uiRevoker(r)}
	if req.Reason == "" {
		req.Reason = "revoked from the status page"
	}
	tok, err := strconv.ParseUint(r.PostForm.Get("token"), 10, 64)
	if err != nil || tok == 0 {
		return s.uiMessage(w, r, http.StatusBadRequest, "Bad request", "The form names no lease token.")
	}
	req.Token = token.Token(tok)
	if err := req.Validate(); err != nil {
		return s.uiMessage(w, r, http.StatusBadRequest, "Bad request", err.Error())
	}
	ctx, cancel := context.WithTimeout(r.Context(), uiReadBudget)
	defer cancel()
	info, err := rv.Revoke(ctx, req)
	switch {
	case errors.Is(err, lease.ErrNotFound):
		return s.uiMessage(w, r, http.StatusNotFound, "Not revoked", "No live lease on "+strconv.Quote(req.Name)+" has token "+strconv.FormatUint(tok, 10)+": it was released, expired or revoked since the page was drawn.")
	case err != nil:
		c := codeFor(err)
		if c.status >= 500 {
			level.Error(s.logger).Log("msg", "request failed", "op", opUI, "method", r.Method, "path", r.URL.Path, "status", c.status, "err", err)
		}
		return s.uiMessage(w, r, c.status, "Not revoked", err.Error())
	}
	level.Info(s.logger).Log("msg", "revoked from the status page", "lease", info.Name, "token", info.Token, "by", req.By)
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
	return nil
}

// uiRevoker names who revoked from the page, for the history: the admin
// session and the address the request came from.
func uiRevoker(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "admin on the status page from " + host
}
