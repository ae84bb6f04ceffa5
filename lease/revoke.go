package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/token"
)

// Revoker is the operator's side of a store: it ends a lease its holder
// cannot or will not release (a stuck process, a lost machine). Every store
// implements it (storage/sqlite, storage/etcd, storage/memory,
// httpapi.Client). Who may call it is the caller's concern: in process,
// whoever holds the Store; over HTTP, only a request with the server's
// admin credential, which is not the clients' token.
//
// A revoke is a release made by someone other than the holder. The lease
// row goes at once and the name is handed to its oldest waiter, as after a
// Release; the revoked token is never handed out again (the next grant's is
// higher), so a fenced resource refuses the revoked holder once it has seen
// the newer token. The store remembers the revocation, so that the holder
// learns of it at its next Renew or Release: an error matching ErrLost and
// ErrRevoked, a *RevokedError carrying the reason and who asked, which also
// ends the handle's Context with that cause. The store writes the revoke
// into its history (HistoryReader) in the same transaction.
type Revoker interface {
	// Revoke ends the live lease on req.Name (only if its token is
	// req.Token, when that is not zero) and returns the public view it
	// had. Errors: ErrInvalid (nothing is written), ErrNotFound when no
	// live lease matches, ErrUnavailable, or ctx's error.
	Revoke(ctx context.Context, req RevokeRequest) (Info, error)
}

// RevokeRequest is the argument of Revoker.Revoke.
type RevokeRequest struct {
	Name   string      // the lease to end
	Token  token.Token // if not zero, revoke only the lease with this token (a guard against revoking its successor)
	Reason string      // why, for the holder and the history: at most MaxReasonLen bytes, may be empty
	By     string      // who asked, for the history (an operator, a host): at most MaxOwnerLen bytes, may be empty
}

// MaxReasonLen bounds RevokeRequest.Reason and Event.Reason, in bytes.
const MaxReasonLen = 256

// Validate checks every field of r.
func (r RevokeRequest) Validate() error {
	if err := validateName(r.Name); err != nil {
		return err
	}
	if r.Token != 0 {
		if err := validateToken(r.Token); err != nil {
			return err
		}
	}
	if err := validateText("reason", r.Reason, MaxReasonLen, true); err != nil {
		return err
	}
	return validateText("by", r.By, MaxOwnerLen, true)
}

// ErrRevoked: an operator revoked the lease (Revoker.Revoke). It always
// comes with ErrLost, as a *RevokedError: whoever held the lease must stop
// writing, and knows it was not a mere expiry.
var ErrRevoked = errors.New("lease: revoked")

// RevokedError is the ErrLost a holder gets after its lease was revoked:
// the lease Name with Token was ended by By, for Reason, at At (wall clock,
// as the store saw it; zero when unknown). It matches both ErrLost and
// ErrRevoked.
type RevokedError struct {
	Name   string
	Token  token.Token
	Reason string
	By     string
	At     time.Time
}

func (e *RevokedError) Error() string {
	msg := fmt.Sprintf("lease: lost: revoked: %q with token %d", e.Name, e.Token)
	if e.By != "" {
		msg += fmt.Sprintf(" by %q", e.By)
	}
	if e.Reason != "" {
		msg += fmt.Sprintf(": %s", e.Reason)
	}
	return msg
}

// Is reports whether target is ErrLost or ErrRevoked.
func (e *RevokedError) Is(target error) bool { return target == ErrLost || target == ErrRevoked }
