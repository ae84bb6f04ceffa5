package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The waiters queue, the batch's side of a waiting Acquire (wait.go tells
// the call's side). An Acquire that waits for a held name queues in the
// file (the waiters table, schema/3.sql and 4.sql), so that the acquires of
// every process on the file are served in the order they came: the try
// that finds the name held inserts the call's row in its own batch, and
// from then on a release, or any batch that finds the name free, hands the
// name to the oldest live row in the same transaction (serve).
//
// A row of this process is answered directly. A row of another process is
// granted the same way, the lease written for its holder with a new token
// and its whole TTL from the grant, but the row is marked with the token,
// the lease's expiry and the granting Store, and that process's bell is
// rung (bell.go): its call claims the grant in a batch of its own (poll),
// which only deletes the row and answers the grant as made, even expired
// (one call, one effect). The grant counts from the release's batch, later
// than the instant the caller's handle counts from (before the call was
// sent). A grant nobody claims within claimWindow (its process frozen, or
// killed after the grant) lapses: the lease is deleted, as if released,
// and the name goes to the next waiter. The granting Store looks once the
// window has passed (opLapse); should it have died, any poll for the name
// looks too, and the waiters' fallback check wakes them for it (bell.go).
// A call that stops waiting (its context) keeps a grant it was made: its
// row is deleted, so the grant never lapses, and the holder's next Acquire
// gets it back, as for any unknown outcome.
//
// A row whose process is dead is skipped and deleted: its liveness byte
// (bell.go) is not locked.

// claimWindow is how long a grant to a waiter of another process waits to
// be claimed. The bell wakes the waiter within milliseconds; the fallback
// check (bellTick) well within the window.
const claimWindow = 1500 * time.Millisecond

// enqueued is a waiters row a batch inserted for parked op p (replacing
// row old, if not zero); the hub learns of it once the batch commits.
type enqueued struct {
	seq, old int64
	p        *op
}

// rung is a row of another process a batch granted: its process is rung
// once the batch commits, and the name served again if the grant lapses.
type rung struct {
	process string
	seq     int64
	name    string
}

// held answers o, which found the name held by r until free: a HeldError.
// A try of a waiting call that has no row yet (o.parked, the call's parked
// op) queues the call in the file, at the end.
func (b *batch) held(o *op, r row, free time.Duration) (result, error) {
	res := result{
		err:       &lease.HeldError{Name: o.name, Owner: r.owner, Expires: b.render(free)},
		untilFree: max(free-b.now, 0),
	}
	if o.parked == nil {
		return res, nil
	}
	x, err := b.s.w.enqueue.ExecContext(b.ctx, o.name, o.holder, o.owner, o.ttl.Milliseconds(),
		o.lockDelay.Milliseconds(), b.s.bell.id)
	if err != nil {
		return result{}, fmt.Errorf("queue for %q: %w", o.name, err)
	}
	if res.seq, err = x.LastInsertId(); err != nil {
		return result{}, fmt.Errorf("queue for %q: %w", o.name, err)
	}
	b.enq = append(b.enq, enqueued{seq: res.seq, old: o.seq, p: o.parked})
	return res, nil
}

// waiterRow is a row of the waiters table that waits.
type waiterRow struct {
	seq                    int64
	holder, owner, process string
	ttlMS, delayMS         int64
}

// serveBatch is how many rows serve reads at a time: enough to pass the
// dead rows a killed process left, without reading a long queue whole.
const serveBatch = 16

// serve hands name, which is free, to the oldest live waiter of any
// process, and reports whether there was one. Rows of this process whose
// call no longer waits, rows of dead processes and grants that lapsed are
// deleted on the way.
func (b *batch) serve(name string) (bool, error) {
	if ok, err := b.roomForLease(); !ok || err != nil {
		return false, err
	}
	for {
		queue, err := b.waitersOf(name)
		if err != nil || len(queue) == 0 {
			return false, err
		}
		for _, w := range queue {
			served, err := b.serveRow(name, w)
			if served || err != nil {
				return served, err
			}
		}
	}
}

// waitersOf reads the oldest serveBatch rows that wait for name.
func (b *batch) waitersOf(name string) ([]waiterRow, error) {
	rows, err := b.s.w.waitersOf.QueryContext(b.ctx, name, serveBatch)
	if err != nil {
		return nil, fmt.Errorf("read waiters of %q: %w", name, err)
	}
	var queue []waiterRow
	for rows.Next() {
		var w waiterRow
		if err := rows.Scan(&w.seq, &w.holder, &w.owner, &w.ttlMS, &w.delayMS, &w.process); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read waiters of %q: %w", name, err)
		}
		queue = append(queue, w)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read waiters of %q: %w", name, err)
	}
	return queue, nil
}

// serveRow hands name to the call of row w if it still waits (and then
// reports true), or deletes the row.
func (b *batch) serveRow(name string, w waiterRow) (bool, error) {
	if w.process == b.s.bell.id {
		// This process's own: alive exactly when its call still waits.
		p := b.own(w.seq)
		if err := b.dropWaiter(w.seq); err != nil {
			return false, err
		}
		if p == nil || !p.state.CompareAndSwap(opPending, opTaken) {
			return false, nil
		}
		r, err := b.grantTo(name, p.holder, p.owner, p.ttl, p.ttl, p.lockDelay)
		if err != nil {
			return false, err
		}
		*b.handed = append(*b.handed, p)
		b.handedRes = append(b.handedRes, result{grant: b.grant(name, r)})
		return true, nil
	}
	if !b.s.alive(w.process) {
		return false, b.dropWaiter(w.seq) // its process is gone
	}
	// A grant to be claimed within claimWindow, else it lapses.
	ttl := time.Duration(w.ttlMS) * time.Millisecond
	r, err := b.grantTo(name, w.holder, w.owner, ttl, ttl, time.Duration(w.delayMS)*time.Millisecond)
	if err != nil {
		return false, err
	}
	if _, err := b.s.w.markWaiter.ExecContext(b.ctx, int64(r.token), int64(r.expires), b.s.bell.id, w.seq); err != nil {
		return false, fmt.Errorf("hand %q over: %w", name, err)
	}
	b.rung = append(b.rung, rung{process: w.process, seq: w.seq, name: name})
	return true, nil
}

// roomForLease reports whether a hand-over may grant a new lease: the
// token space is not spent, and WithMaxLeases is not reached.
func (b *batch) roomForLease() (bool, error) {
	if b.counter >= token.Max {
		return false, nil
	}
	max := b.s.quota.MaxLeases
	if max <= 0 {
		return true, nil
	}
	if !b.q.liveKnown {
		if err := b.s.w.conn.QueryRowContext(b.ctx, "SELECT COUNT(*) FROM leases WHERE expires_at > ?",
			int64(b.now)).Scan(&b.q.live); err != nil {
			return false, fmt.Errorf("count live leases: %w", err)
		}
		b.q.liveKnown = true
	}
	return b.q.live < max, nil
}

// own returns the parked op of this process's row seq, or nil.
func (b *batch) own(seq int64) *op {
	for _, e := range b.enq {
		if e.seq == seq {
			return e.p
		}
	}
	return b.s.waiters.bySeq(seq)
}

func (b *batch) dropWaiter(seq int64) error {
	if _, err := b.s.w.dropWaiter.ExecContext(b.ctx, seq); err != nil {
		return fmt.Errorf("delete waiter %d: %w", seq, err)
	}
	b.drop = append(b.drop, seq)
	return nil
}

// grantTo grants name, known to be free, with the next token, for life
// (its ttl).
func (b *batch) grantTo(name, holder, owner string, ttl, life, lockDelay time.Duration) (row, error) {
	b.counter++
	r := row{holder: holder, owner: owner, token: b.counter, ttl: ttl, expires: b.now + life, lockDelay: lockDelay}
	if _, err := b.writeLease(b.s.w.grant, name, r); err != nil {
		return row{}, fmt.Errorf("hand %q over: %w", name, err)
	}
	if err := b.record(lease.EventGrant, name, r.token, owner, "handed over", "", time.Time{}); err != nil { // history.go
		return row{}, err
	}
	if b.q.liveKnown {
		b.q.live++
	}
	return r, nil
}

// poll is a queued call's turn (an opWait), when its bell rang, the lease
// it found may have expired, or its wait ran out. A grant in its row is
// claimed, if it has not lapsed. Otherwise the call tries the name again,
// after a grant to another waiter that lapsed is taken back; the try serves
// the queue if the name is free (the oldest waiter may be this call, whose
// parked op is then answered). A row that is gone (its grant lapsed, or the
// row was deleted) is queued again, at the end. A final poll withdraws the
// row and tries the acquire once more without queueing.
func (b *batch) poll(o *op) (result, error) {
	var tok, exp int64
	err := b.s.w.waiterRow.QueryRowContext(b.ctx, o.seq).Scan(&tok, &exp)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return result{}, fmt.Errorf("read waiter %d: %w", o.seq, err)
	}
	if found && tok > 0 {
		// The grant was made by a full batch, so it is on disk (every
		// batch that grants is full: deferFull). The claim only deletes
		// the row, but it must be on disk too before the call is
		// answered: a claim a power loss undid brings the row back,
		// still marked, and after the restart the grant looks unclaimed
		// and lapsed (its granter dead), is taken back and granted again
		// with a higher token while whoever this call answered (an HTTP
		// client on another host) still believes in it for its TTL
		// (TestPowerLossClaim). So a claim is left to a full batch.
		if b.deferFull() {
			return result{}, nil
		}
		if err := b.dropWaiter(o.seq); err != nil {
			return result{}, err
		}
		return b.claim(o, token.Token(tok), time.Duration(exp)), nil
	}
	if _, err := b.revokeLapsed(o.name, false); err != nil || b.deferred {
		return result{}, err
	}
	try := &op{kind: opAcquire, name: o.name, holder: o.holder, owner: o.owner, ttl: o.ttl, lockDelay: o.lockDelay}
	switch {
	case o.final:
		if found {
			if err := b.dropWaiter(o.seq); err != nil {
				return result{}, err
			}
		}
	case !found:
		try.parked, try.seq = o.parked, o.seq // queue again
	default:
		res, err := b.acquireInQuota(try)
		if err == nil && !b.deferred && !errors.Is(res.err, lease.ErrHeld) {
			// Answered (the holder's own lease extended, or a refusal): a
			// row must live only while its call waits, or a later
			// release would grant the holder a lease nobody asked for.
			err = b.dropWaiter(o.seq)
		}
		return res, err
	}
	return b.acquireInQuota(try)
}

// claim answers o with the grant tok made to its row: the grant's own
// terms (o's holder, owner, TTL and lock-delay; the deadline the row
// recorded), not the lease row as it is now. The holder may be shared with
// another call that extended the lease with its own TTL since the grant:
// that call's answer is its own, and answering this one with it would be
// an answer no single call produced (TestClaimAnswersOwnGrant). A grant
// that expired before the claim (and that someone else may hold since) is
// still the call's one effect: it is answered, expired, and the caller's
// handle finds it lost. A grant taken back (revokeLapsed) has no row left
// to claim.
func (b *batch) claim(o *op, tok token.Token, expires time.Duration) result {
	r := row{holder: o.holder, owner: o.owner, token: tok, ttl: o.ttl, expires: expires, lockDelay: o.lockDelay}
	return result{grant: b.grant(o.name, r)}
}

// revokeLapsed takes back a grant of name to another process's waiter that
// was not claimed within claimWindow, and reports whether there was one:
// the lease is deleted, as if released, and the row goes. The Store that
// made the grant takes it back once claimWindow has passed on its own
// timer too (granter: an opLapse), anyone else only once that Store is
// dead: a store clock that jumps (a test's, moved by hand) must not take
// back a grant a live waiter is about to claim.
func (b *batch) revokeLapsed(name string, granter bool) (bool, error) {
	var seq, tok int64
	var by string
	err := b.s.w.lapsed.QueryRowContext(b.ctx, name, int64(b.now-claimWindow)).Scan(&seq, &tok, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read lapsed grants of %q: %w", name, err)
	}
	if granter && by != b.s.bell.id || !granter && (by == b.s.bell.id || b.s.alive(by)) {
		return false, nil
	}
	if b.deferFull() {
		return false, nil
	}
	if err := b.recordRow(lease.EventExpire, name, token.Token(tok), "not claimed"); err != nil { // history.go
		return false, err
	}
	if _, err := b.s.w.conn.ExecContext(b.ctx, "DELETE FROM leases WHERE name = ? AND token = ?", name, tok); err != nil {
		return false, fmt.Errorf("take back the lapsed grant of %q: %w", name, err)
	}
	if err := b.ended(name, token.Token(tok), int64(b.now)); err != nil { // ended.go: expired, unclaimed
		return false, err
	}
	b.durable = true
	return true, b.dropWaiter(seq)
}

// lapse is the granting process's second look at a name it granted to a
// waiter of another process (an opLapse, claimWindow later): if the grant
// lapsed, the name goes to the next waiter.
func (b *batch) lapse(o *op) (result, error) {
	revoked, err := b.revokeLapsed(o.name, true)
	if err != nil || !revoked { // (not revoked when deferred)
		return result{}, err
	}
	_, err = b.serve(o.name)
	return result{}, err
}

// forget deletes the rows of calls that stopped waiting (forgetRow).
func (b *batch) forget() error {
	for _, seq := range b.s.waiters.forgotten() {
		if err := b.dropWaiter(seq); err != nil {
			return err
		}
	}
	return nil
}

// sweepWaiters deletes the rows of dead processes.
func (b *batch) sweepWaiters() error {
	rows, err := b.s.w.conn.QueryContext(b.ctx, "SELECT DISTINCT process FROM waiters WHERE process <> ?", b.s.bell.id)
	if err != nil {
		return fmt.Errorf("read waiting processes: %w", err)
	}
	var dead []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return fmt.Errorf("read waiting processes: %w", err)
		}
		if !b.s.alive(p) {
			dead = append(dead, p)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read waiting processes: %w", err)
	}
	for _, p := range dead {
		if _, err := b.s.w.conn.ExecContext(b.ctx, "DELETE FROM waiters WHERE process = ?", p); err != nil {
			return fmt.Errorf("delete the waiters of a dead process: %w", err)
		}
	}
	return nil
}

// queueCommitted tells the hub what the committed batch b did to the rows
// of this process, rings the processes whose rows it granted, and has
// their names looked at again once their grants may have lapsed.
func (s *Store) queueCommitted(b *batch) {
	if len(b.enq) > 0 || len(b.drop) > 0 {
		s.waiters.committed(b.enq, b.drop)
	}
	for _, g := range b.rung {
		ring(g.process, ringMessage(g.seq))
		name := g.name
		time.AfterFunc(claimWindow+5*time.Millisecond, func() { s.lapseLater(name) })
	}
}

// lapseLater queues an opLapse for name; nobody waits for its answer.
func (s *Store) lapseLater(name string) {
	o := newOp(opLapse)
	o.name = name
	select {
	case s.ops <- o:
	case <-s.closing:
	default: // the queue is full: the waiters' fallback check covers it
	}
}

// forgetRow has the next batch delete row seq, whose call stopped waiting
// without a batch of its own (its context ended), and asks for that batch.
func (s *Store) forgetRow(seq int64) {
	if seq == 0 {
		return
	}
	s.waiters.forget(seq)
	s.nudge()
}

// nudge queues an empty op, so that the writer runs a batch soon; nobody
// waits for its answer.
func (s *Store) nudge() {
	o := newOp(opSync)
	select {
	case s.ops <- o:
	default: // the queue is full: a batch is coming anyway
	}
}
