package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
)

var _ lease.Revoker = (*Store)(nil)

// Revoke ends the live lease on req.Name, only if its token is req.Token
// when that is not zero (see lease.Revoker), in one transaction with the
// rest of its batch: the row goes, as after a release; the revocation is
// kept (table revoked, for a day) so that the holder's next renew or
// release gets a *lease.RevokedError; the event goes into the history;
// and the name is handed to its oldest waiter in any process. The counter
// is untouched: the revoked token is never handed out again.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrNotFound when no
// live lease matches, ErrClosed, a *FailedError or another error matching
// lease.ErrUnavailable, or ctx's error.
func (s *Store) Revoke(ctx context.Context, req lease.RevokeRequest) (lease.Info, error) {
	if err := req.Validate(); err != nil {
		return lease.Info{}, fmt.Errorf("sqlite: revoke: %w", err)
	}
	o := newOp(opRevoke)
	o.name, o.tok, o.revoke = req.Name, req.Token, &req
	res := s.submit(ctx, o)
	if res.err != nil {
		return lease.Info{}, res.err
	}
	return res.grant.Info(), nil
}

// revoke is Revoke's change, in the batch.
func (b *batch) revoke(o *op) (result, error) {
	b.durable = true
	r, found, err := b.row(o.name)
	if err != nil {
		return result{}, err
	}
	if !found || b.now >= r.expires || (o.tok != 0 && r.token != o.tok) {
		what := "no live lease"
		if o.tok != 0 {
			what += fmt.Sprintf(" with token %d", o.tok)
		}
		return result{err: fmt.Errorf("sqlite: revoke %q: %s: %w", o.name, what, lease.ErrNotFound)}, nil
	}
	if _, err := b.s.w.conn.ExecContext(b.ctx, "DELETE FROM leases WHERE name = ? AND token = ?", o.name, int64(r.token)); err != nil {
		return result{}, fmt.Errorf("revoke %q: %w", o.name, err)
	}
	if err := b.ended(o.name, r.token, int64(r.expires)); err != nil { // ended.go
		return result{}, err
	}
	rv := o.revoke
	if _, err := b.s.w.h.markRevoked.ExecContext(b.ctx, o.name, int64(r.token), rv.Reason, rv.By, b.wall.UnixNano()); err != nil {
		return result{}, fmt.Errorf("revoke %q: %w", o.name, err)
	}
	if err := b.record(lease.EventRevoke, o.name, r.token, r.owner, rv.Reason, rv.By, time.Time{}); err != nil {
		return result{}, err
	}
	if b.q.liveKnown {
		b.q.live--
	}
	res := result{grant: b.grant(o.name, r)}
	if b.queued() { // as releaseCounted: a file with no waiters row has nobody to hand it to
		if _, err := b.serve(o.name); err != nil {
			return result{}, err
		}
	}
	return res, nil
}

// lost is the error of a renew or release (verb) of o that found no such
// live lease: a *lease.RevokedError when that lease was revoked, else
// lostError's.
func (b *batch) lost(verb string, o *op) (error, error) {
	var reason, by string
	var at int64
	err := b.s.w.h.revoked.QueryRowContext(b.ctx, o.name, int64(o.tok)).Scan(&reason, &by, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return lostError(verb, o), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read revocation of %q: %w", o.name, err)
	}
	return fmt.Errorf("sqlite: %s %q with token %d: %w", verb, o.name, o.tok,
		&lease.RevokedError{Name: o.name, Token: o.tok, Reason: reason, By: by, At: time.Unix(0, at).UTC()}), nil
}
