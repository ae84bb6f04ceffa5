package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The status page's sign-in. The API's clients send a bearer token with
// every request; a browser cannot, without a script, and Basic auth would
// make the browser attach the credential to every request to the server,
// cross-site form posts included, with no way to sign out. So the page asks
// for the token once, in a form, and answers with a session cookie:
//
//   - HttpOnly (no script reads it), SameSite=Strict (no other site's page
//     makes the browser send it, not even a link), Path=/ui (the API never
//     sees it: /v1/ still needs the bearer token), Secure over TLS;
//   - its value is the role, an expiry and an HMAC under a key the Server
//     draws at random when it starts, over both, the role's sign-out epoch
//     and a hash of the role's token: nothing of the token is in it, and a
//     restart signs everyone out;
//   - signing out ends the session on the server, not only in the browser:
//     it moves its role's epoch on, so that every cookie of that role made
//     before, a copied one included, fails its HMAC (the epoch is kept as
//     long as the key is: in memory, a restart draws a new key anyway);
//   - a session is bound to the token it signed in with: the tokens are read
//     when the server starts, so a changed token file takes a restart, which
//     ends every session, and the hash in the HMAC keeps it so for a token
//     changed any other way;
//   - a form that changes something (revoke, sign out) carries a form token,
//     an HMAC of the session under the same key: a page elsewhere can make
//     a browser post the form, but cannot know the token (SameSite and the
//     Origin check of guard.go stop such a post first; the form token does
//     not depend on them).
//
// The bearer token of the clients signs in as a viewer; the admin token
// (WithAdminToken) as admin, who may also revoke. A server without a bearer
// token shows the page to anyone who can reach it, as it answers the API,
// and asks for sign-in only to revoke.

// uiCookie is the session cookie's name.
const uiCookie = "picket_ui"

// uiSessionTTL is how long a session lasts.
const uiSessionTTL = 12 * time.Hour

// uiRole is what a session may do.
type uiRole int

const (
	roleNone   uiRole = iota // not signed in, and the server needs a token: sees the sign-in form
	roleOpen                 // not signed in, on a server without a bearer token: sees the page
	roleViewer               // signed in with the clients' bearer token
	roleAdmin                // signed in with the admin token: sees the page and may revoke
)

func (r uiRole) String() string {
	switch r {
	case roleViewer:
		return "viewer"
	case roleAdmin:
		return "admin"
	}
	return ""
}

// uiSession is the requester's session, as its cookie says.
type uiSession struct {
	role  uiRole
	value string // the cookie's value; "" when not signed in
}

// Signed reports whether the request came with a valid session cookie.
func (u uiSession) Signed() bool { return u.value != "" }

// Role names the session's role.
func (u uiSession) Role() string { return u.role.String() }

// Viewer reports whether the session may see the page but not revoke.
func (u uiSession) Viewer() bool { return u.role == roleViewer || u.role == roleOpen }

// canSee reports whether the session may see the status page.
func (u uiSession) canSee() bool { return u.role != roleNone }

// uiKeys is the Server's random key for sessions and form tokens, and what
// else a session's HMAC covers: each role's sign-out epoch and token hash.
type uiKeys struct {
	key    [32]byte
	tokens [roleAdmin + 1]string // a hash of each role's token, as the HMAC covers it

	mu    sync.Mutex
	epoch [roleAdmin + 1]uint64 // each role's sign-outs so far
}

// newUIKeys draws a key for a server whose clients' token has hash viewer
// and admin token hash admin (nil: none).
func newUIKeys(viewer, admin *[sha256.Size]byte) *uiKeys {
	k := new(uiKeys)
	_, _ = rand.Read(k.key[:]) // never fails (crypto/rand, Go 1.24+)
	for role, h := range map[uiRole]*[sha256.Size]byte{roleViewer: viewer, roleAdmin: admin} {
		if h != nil {
			k.tokens[role] = base64.RawURLEncoding.EncodeToString(h[:])
		}
	}
	return k
}

// signOut ends every session of role made so far.
func (k *uiKeys) signOut(role uiRole) {
	if role != roleViewer && role != roleAdmin {
		return
	}
	k.mu.Lock()
	k.epoch[role]++
	k.mu.Unlock()
}

// sessionMAC is the HMAC of a session's body for role: over the body, the
// role's epoch and its token's hash.
func (k *uiKeys) sessionMAC(role uiRole, body string) string {
	k.mu.Lock()
	epoch := k.epoch[role]
	k.mu.Unlock()
	return k.mac("session", body, strconv.FormatUint(epoch, 10), k.tokens[role])
}

func (k *uiKeys) mac(parts ...string) string {
	m := hmac.New(sha256.New, k.key[:])
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns the cookie value of a new session of role.
func (k *uiKeys) newSession(role uiRole, now time.Time) string {
	body := "v1." + role.String() + "." + strconv.FormatInt(now.Add(uiSessionTTL).Unix(), 10)
	return body + "." + k.sessionMAC(role, body)
}

// session reads v, a cookie's value: its role if it is one of this
// Server's, not signed out and not expired, roleNone otherwise.
func (k *uiKeys) session(v string, now time.Time) uiRole {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return roleNone
	}
	body, sig := v[:i], v[i+1:]
	parts := strings.Split(body, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return roleNone
	}
	role := roleNone
	switch parts[1] {
	case "viewer":
		role = roleViewer
	case "admin":
		role = roleAdmin
	default:
		return roleNone
	}
	if !hmac.Equal([]byte(sig), []byte(k.sessionMAC(role, body))) {
		return roleNone
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || now.Unix() >= exp {
		return roleNone
	}
	return role
}

// formToken is the form token of the session whose cookie value is v.
func (k *uiKeys) formToken(v string) string {
	if v == "" {
		return ""
	}
	return k.mac("form", v)
}

// checkForm reports whether got is the form token of session u.
func (k *uiKeys) checkForm(u uiSession, got string) bool {
	want := k.formToken(u.value)
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// uiSessionOf returns r's session.
func (s *Server) uiSessionOf(r *http.Request) uiSession {
	if c, err := r.Cookie(uiCookie); err == nil {
		if role := s.ui.session(c.Value, time.Now()); role != roleNone {
			return uiSession{role: role, value: c.Value}
		}
	}
	if s.auth == nil {
		return uiSession{role: roleOpen}
	}
	return uiSession{role: roleNone}
}

// tokenRole returns the role tok signs in as: admin for the admin token,
// viewer for the clients' bearer token, roleNone otherwise. Both
// comparisons are made, on hashes, whatever the first one found.
func (s *Server) tokenRole(tok string) uiRole {
	sum := sha256.Sum256([]byte(tok))
	admin, viewer := false, false
	if a := s.adminHash(); a != nil {
		admin = subtle.ConstantTimeCompare(sum[:], a[:]) == 1
	}
	if s.auth != nil {
		viewer = subtle.ConstantTimeCompare(sum[:], s.auth[:]) == 1
	}
	switch {
	case tok == "":
		return roleNone
	case admin:
		return roleAdmin
	case viewer:
		return roleViewer
	}
	return roleNone
}

// setSession answers with the cookie of a new session of role (or, for
// roleNone, one that ends the session).
func setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     uiCookie,
		Value:    value,
		Path:     "/ui",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}
