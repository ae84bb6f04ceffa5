package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// batch is the state of one write transaction: the store's clock read once
// after BEGIN IMMEDIATE (so after every commit that preceded it, in any
// process), and the token counter, read once and written once.
type batch struct {
	s       *Store
	ctx     context.Context
	now     time.Duration
	wall    time.Time
	counter token.Token
	first   token.Token // the counter as the batch read it
	q       batchQuota  // quota.go
	waiting bool        // the waiters table had a row when the batch began (queued)
	watched bool        // some name of the file is watched: ends are recorded (ended.go)

	// The waiters queue (queue.go): the acquires a hand-over in this
	// batch answered in this process, their results, the rows this batch
	// queued (registered in the hub once it commits), the rows it deleted
	// and the rows of other processes it granted.
	handed    *[]*op
	handedRes []result
	enq       []enqueued
	drop      []int64
	rung      []rung

	// durable: the batch changed what must survive a power loss before
	// anyone is told; light: the batch commits with synchronous=NORMAL, so
	// it must not (light.go: lightBatch); deferred: the op being applied
	// would have, and is left for a full batch (deferFull).
	durable, light, deferred bool

	events   []event // the history's events, written before COMMIT (history.go)
	recorded int     // how many were written

	// join, when set, returns the ops given with those that have arrived
	// since appended (writer.go: joinBatch); epoch is the clock epoch the
	// batch began in.
	join  func([]*op) []*op
	epoch string
}

// start reads the batch's head in one statement, right after BEGIN: the
// token counter, whether anyone waits in the file, and whether the file's
// clock epoch is the clock's. The epoch is compared at every batch, in this
// transaction, never cached: another opener (after a reboot, or in another
// time namespace) may have moved it since this store last wrote, and
// deadlines from another epoch mean nothing here; then the reboot rule
// brings the file to this clock's epoch first (syncEpoch). The store's
// clock is read after that. start returns the epoch the batch runs in.
func (b *batch) start() (string, error) {
	s := b.s
	epoch := s.clock.Epoch()
	var c, same, waiting, watched int64
	if err := s.w.head.QueryRowContext(b.ctx, epoch).Scan(&c, &same, &waiting, &watched); err != nil {
		return "", fmt.Errorf("read token counter and epoch: %w", err)
	}
	if same == 0 {
		var err error
		if epoch, err = s.syncEpoch(b.ctx, s.w.conn); err != nil {
			return "", err
		}
	}
	b.now, b.wall = s.clock.Now(), s.clock.Wall()
	b.counter = token.Token(c)
	b.waiting, b.watched = waiting != 0, watched != 0
	return epoch, nil
}

// queued reports whether the file may hold waiters rows in this batch:
// it held some when the batch began (no other process writes before the
// batch commits), or the batch queued a call (every row is inserted by
// held, queue.go). When it reports false, a grant on a free name need not
// look for a queue, and a release has nobody to hand its name to.
func (b *batch) queued() bool { return b.waiting || len(b.enq) > 0 }

// errCommit marks the error of a batch whose COMMIT failed: unlike an
// error before it, its outcome is in doubt.
var errCommit = errors.New("commit")

// errDeferred is the result of an op a light batch left for a full one
// (light.go: deferFull); it never reaches a caller.
var errDeferred = errors.New("deferred to a full batch")

// errLightDurable is the error of a light batch that changed what must
// survive a power loss: a bug (deferFull was missed), caught before COMMIT.
var errLightDurable = errors.New("internal error: a light batch changed what must survive a power loss")

func (b *batch) apply(o *op) (result, error) {
	switch o.kind {
	case opRenew, opRelease, opPut, opDelete, opSweep:
		b.durable = true
	}
	switch o.kind {
	case opAcquire:
		return b.acquireInQuota(o)
	case opRenew:
		return b.renew(o)
	case opRelease:
		return b.releaseCounted(o)
	case opPut:
		return b.put(o)
	case opDelete:
		return b.kvDelete(o)
	case opSweep:
		return b.sweep(o)
	case opWait:
		return b.poll(o)
	case opLapse:
		return b.lapse(o)
	case opRevoke:
		return b.revoke(o)
	case opPrune:
		return b.prune(o)
	case opMark:
		return b.mark(o) // ended.go
	case opSync:
		return result{}, nil
	}
	return result{}, fmt.Errorf("unknown op kind %d", o.kind)
}

// row is a lease row as the writer reads it.
type row struct {
	holder, owner string
	token         token.Token
	ttl           time.Duration
	expires       time.Duration
	lockDelay     time.Duration // after expires, the name stays unavailable this long
}

func (b *batch) row(name string) (row, bool, error) {
	var r row
	var tok, ttlMS, exp, delayMS int64
	err := b.s.w.lease.QueryRowContext(b.ctx, name).Scan(&r.holder, &r.owner, &tok, &ttlMS, &exp, &delayMS)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("read lease %q: %w", name, err)
	}
	r.token, r.ttl, r.expires = token.Token(tok), time.Duration(ttlMS)*time.Millisecond, time.Duration(exp)
	r.lockDelay = time.Duration(delayMS) * time.Millisecond
	return r, true, nil
}

// render turns a store-clock deadline into wall-clock time for people.
func (b *batch) render(deadline time.Duration) time.Time {
	return b.wall.Add(deadline - b.now).UTC()
}

func (b *batch) grant(name string, r row) lease.Grant {
	return lease.Grant{Name: name, Holder: r.holder, Owner: r.owner, Token: r.token, TTL: r.ttl, Expires: b.render(r.expires)}
}

// acquire grants o.name if it is free, extends the holder's own lease, or
// finds the name held (and queues a waiting call: held). A light batch
// only queues: anything else it leaves, unwritten, to a full batch
// (light.go: deferFull).
func (b *batch) acquire(o *op) (result, error) {
	if !b.light {
		if granted, res, err := b.grantFree(o); granted || err != nil {
			if granted {
				err = b.record(lease.EventGrant, o.name, res.grant.Token, o.owner, "", "", time.Time{}) // history.go
			}
			return res, err
		}
	}
	r, found, err := b.row(o.name)
	if err != nil {
		return result{}, err
	}
	own := found && b.now < r.expires && r.holder == o.holder
	if free := r.expires + r.lockDelay; found && !own && b.now < free {
		return b.held(o, r, free)
	}
	if b.deferFull() { // all that follows must survive a power loss
		return result{}, nil
	}
	if own {
		// The holder asks again (a retry after a lost answer): the same
		// grant, extended.
		b.durable = true
		r.ttl, r.expires, r.lockDelay = o.ttl, b.now+o.ttl, o.lockDelay
		if _, err := b.s.w.extendDelay.ExecContext(b.ctx, o.ttl.Milliseconds(), int64(r.expires),
			r.lockDelay.Milliseconds(), o.name); err != nil {
			return result{}, fmt.Errorf("extend lease %q: %w", o.name, err)
		}
		return result{grant: b.grant(o.name, r)}, nil
	}
	if found {
		if err := b.recordExpiry(o.name, r, ""); err != nil { // history.go
			return result{}, err
		}
	}
	// Free, perhaps by an expiry nobody acted on: the oldest live waiter
	// comes first.
	served, err := b.serve(o.name)
	if err != nil {
		return result{}, err
	}
	if served {
		if r, _, err = b.row(o.name); err != nil {
			return result{}, err
		}
		return b.held(o, r, r.expires+r.lockDelay)
	}
	if b.counter >= token.Max {
		return result{err: ErrExhausted}, nil
	}
	b.counter++
	r = row{holder: o.holder, owner: o.owner, token: b.counter, ttl: o.ttl, expires: b.now + o.ttl, lockDelay: o.lockDelay}
	if _, err := b.writeLease(b.s.w.grant, o.name, r); err != nil {
		return result{}, fmt.Errorf("grant lease %q: %w", o.name, err)
	}
	if err := b.record(lease.EventGrant, o.name, r.token, r.owner, "", "", time.Time{}); err != nil {
		return result{}, err
	}
	return result{grant: b.grant(o.name, r)}, nil
}

// grantFree is acquire's common case in one statement: if the name is free
// (no row, or an expired one whose lock-delay has passed), it takes the next
// token and grants it. It reports false, and writes nothing, when the name
// has a live or lock-delayed row (the holder's own, or another's), a
// waiters row, or the token space is spent: acquire then reads the row and
// decides.
func (b *batch) grantFree(o *op) (bool, result, error) {
	if b.counter >= token.Max {
		return false, result{}, nil
	}
	r := row{holder: o.holder, owner: o.owner, token: b.counter + 1, ttl: o.ttl, expires: b.now + o.ttl, lockDelay: o.lockDelay}
	var res sql.Result
	var err error
	if b.queued() {
		res, err = b.writeLease(b.s.w.grantFreeUnqueued, o.name, r, o.name)
	} else {
		res, err = b.writeLease(b.s.w.grantFree, o.name, r)
	}
	if err != nil {
		return false, result{}, fmt.Errorf("grant lease %q: %w", o.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, result{}, fmt.Errorf("grant lease %q: %w", o.name, err)
	}
	if n != 1 {
		return false, result{}, nil
	}
	b.counter = r.token
	return true, result{grant: b.grant(o.name, r)}, nil
}

// writeLease runs st, one of the statements that write a new grant's row
// (grant, grantFree, grantFreeUnqueued: stmts.go), with the columns of the
// lease r on name granted now, then extra (grantFreeUnqueued's name
// again): the one place a grant's row is written.
func (b *batch) writeLease(st *sql.Stmt, name string, r row, extra ...any) (sql.Result, error) {
	args := append(make([]any, 0, 9), name, r.holder, r.owner, int64(r.token),
		r.ttl.Milliseconds(), int64(b.now), int64(r.expires), r.lockDelay.Milliseconds())
	return st.ExecContext(b.ctx, append(args, extra...)...)
}

// holds returns the row of the live lease on o.name held by o.holder with
// o.tok, or a result carrying ErrLost.
func (b *batch) holds(o *op, verb string) (row, *result, error) {
	r, found, err := b.row(o.name)
	if err != nil {
		return row{}, nil, err
	}
	if !found || r.holder != o.holder || r.token != o.tok || b.now >= r.expires {
		lost, err := b.lost(verb, o) // revoke.go
		return row{}, &result{err: lost}, err
	}
	return r, nil, nil
}

func (b *batch) renew(o *op) (result, error) {
	r, lost, err := b.holds(o, "renew")
	if lost != nil || err != nil {
		return deref(lost), err
	}
	if o.ttl != 0 {
		r.ttl = o.ttl
	}
	r.expires = b.now + r.ttl
	if _, err := b.s.w.extend.ExecContext(b.ctx, r.ttl.Milliseconds(), int64(r.expires), o.name); err != nil {
		return result{}, fmt.Errorf("renew lease %q: %w", o.name, err)
	}
	return result{grant: b.grant(o.name, r)}, nil
}

// release deletes the row in one statement that also checks it (held by
// o.holder with o.tok and not expired: the conditions of held). No row
// deleted means the lease was lost. releaseCounted (quota.go) then hands
// the name over, if anyone waits (queue.go).
func (b *batch) release(o *op) (result, error) {
	res, err := b.s.w.dropHeld.ExecContext(b.ctx, o.name, o.holder, int64(o.tok), int64(b.now))
	if err != nil {
		return result{}, fmt.Errorf("release lease %q: %w", o.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return result{}, fmt.Errorf("release lease %q: %w", o.name, err)
	}
	if n != 1 {
		lost, err := b.lost("release", o) // revoke.go
		return result{err: lost}, err
	}
	if err := b.ended(o.name, o.tok, endedReleased); err != nil { // ended.go
		return result{}, err
	}
	// The event has no owner: reading it would cost the release a
	// RETURNING; History fills it in from the grant's event (history.go).
	return result{}, b.record(lease.EventRelease, o.name, o.tok, "", "", "", time.Time{})
}

func lostError(verb string, o *op) error {
	return fmt.Errorf("sqlite: %s %q with token %d: %w", verb, o.name, o.tok, lease.ErrLost)
}

func deref(r *result) result {
	if r == nil {
		return result{}
	}
	return *r
}
