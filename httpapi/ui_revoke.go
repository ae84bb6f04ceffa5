package httpapi

import (
	"context"
	"crypto/sha256"
	"net/http"
)

// adminHash is the SHA-256 of the admin token; nil: none.
func (s *Server) adminHash() *[sha256.Size]byte { return nil }

// recentHistory reads the latest events of the store's history.
func (s *Server) recentHistory(ctx context.Context, d *uiStatusData) (bool, []uiEvent) {
	return false, nil
}

// uiRevoke answers POST /ui/revoke.
func (s *Server) uiRevoke(w http.ResponseWriter, r *http.Request) error {
	return s.uiMessage(w, r, http.StatusForbidden, "Refused", "Revoking needs the admin token.")
}
