package memory

import (
	"context"
	"fmt"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Revoke ends the live lease on req.Name (see lease.Revoker): the entry
// goes, waiters wake, and the holder's next Renew or Release gets a
// *lease.RevokedError. Errors: lease.ErrInvalid, lease.ErrNotFound when no
// live lease matches, or ctx's error.
func (s *Store) Revoke(ctx context.Context, req lease.RevokeRequest) (lease.Info, error) {
	if err := req.Validate(); err != nil {
		return lease.Info{}, fmt.Errorf("memory: revoke: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.Info{}, fmt.Errorf("memory: revoke %q: %w", req.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	e, live := s.lookup(req.Name, now)
	if !live || (req.Token != 0 && e.token != req.Token) {
		return lease.Info{}, fmt.Errorf("memory: revoke %q: no live lease%s: %w", req.Name, withToken(req.Token), lease.ErrNotFound)
	}
	info := s.grant(req.Name, e, now).Info()
	delete(s.leases, req.Name)
	s.revoked[req.Name] = &lease.RevokedError{Name: req.Name, Token: e.token, Reason: req.Reason, By: req.By, At: s.wall(now, now)}
	s.record(lease.Event{Kind: lease.EventRevoke, Name: req.Name, Token: e.token, Owner: e.owner, Reason: req.Reason, By: req.By}, now)
	s.end(req.Name, e.token, lease.ReasonRevoked) // watchers see it (watch.go)
	s.wake(req.Name)
	return info, nil
}

// lost returns the error of a renew or release by the holder of tok on
// name that found no such live lease: a *lease.RevokedError if that lease
// was revoked, else lease.ErrLost. s.mu must be held.
func (s *Store) lost(name string, tok token.Token) error {
	if r := s.revoked[name]; r != nil && r.Token == tok {
		c := *r
		return &c
	}
	return lease.ErrLost
}

func withToken(t token.Token) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", t)
}
