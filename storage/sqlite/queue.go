package sqlite

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The waiters queue. An Acquire that waits for a held name queues in the
// file (the waiters table, schema/3.sql), so that the acquires of every
// process on the file are served in the order they came: the try that finds
// the name held inserts the call's row in its own batch, and from then on
// a release, or any batch that finds the name's lease expired, hands the
// name to the oldest live row in the same transaction (serve). A row of
// this process is answered directly, as the in-process hand-over always
// was; a row of another process is marked with the token granted to it,
// and that process learns of it from a change notification on the -wal
// file (watch.go), or else from its own next poll. A waiting call keeps its
// row alive by refreshing its expiry (every poll does); a row past its
// expiry belongs to a call that is gone (a process killed, frozen, or a
// call that gave up) and is skipped and deleted, so a dead waiter never
// holds the name up for longer than that.

// defaultWaiterTTL is how long a waiters row lives without a refresh; the
// waiting call refreshes it every quarter of that.
const defaultWaiterTTL = 2 * time.Second

// Tests change these (export_test.go): zero means the default.
var (
	waiterTTLOverride    atomic.Int64 // a waiters row's life without a refresh
	waitFallbackOverride atomic.Int64 // the longest backoff of a queued waiting Acquire
	legacyDeadWaiters    atomic.Bool  // the control: expired rows are served like live ones
	noWatch              atomic.Bool  // the control: no change notification, the timer only
)

func waiterTTL() time.Duration {
	if d := waiterTTLOverride.Load(); d > 0 {
		return time.Duration(d)
	}
	return defaultWaiterTTL
}

func waitFallback() time.Duration {
	if d := waitFallbackOverride.Load(); d > 0 {
		return time.Duration(d)
	}
	return waitMaxSleep
}

// enqueued is a waiters row a batch inserted for parked op p (replacing
// row old, if not zero); the hub learns of it once the batch commits.
type enqueued struct {
	seq, old int64
	p        *op
}

// remoteGrant is what another process wrote into a row of this one.
type remoteGrant struct {
	token   token.Token
	expires time.Duration // the store's clock
}

// newProcessID names a Store in the waiters table.
func newProcessID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	return hex.EncodeToString(b[:])
}

// held answers o, which found the name held by r until free: a HeldError.
// A try of a waiting call that has no row yet (o.parked, the call's parked
// op) queues the call in the file, at the end.
func (b *batch) held(o *op, r row, free time.Duration) (result, error) {
	res := result{
		err:       &lease.HeldError{Name: o.name, Owner: r.owner, Expires: b.render(free)},
		untilFree: max(free-b.now, 0),
	}
	if o.parked == nil || !fileQueue() {
		return res, nil
	}
	x, err := b.s.w.enqueue.ExecContext(b.ctx, o.name, o.holder, o.owner, o.ttl.Milliseconds(),
		o.lockDelay.Milliseconds(), b.s.waiters.process(), int64(b.now+waiterTTL()))
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
	seq                     int64
	holder, owner, process  string
	ttlMS, delayMS, expires int64
}

// serve hands name, which is free, to the oldest live waiter of any
// process, and reports whether there was one. Rows of this process whose
// call no longer waits, and rows of other processes past their expiry, are
// deleted on the way.
func (b *batch) serve(name string) (bool, error) {
	if ok, err := b.roomForLease(); !ok || err != nil {
		return false, err
	}
	rows, err := b.s.w.waitersOf.QueryContext(b.ctx, name)
	if err != nil {
		return false, fmt.Errorf("read waiters of %q: %w", name, err)
	}
	var queue []waiterRow
	for rows.Next() {
		var w waiterRow
		if err := rows.Scan(&w.seq, &w.holder, &w.owner, &w.ttlMS, &w.delayMS, &w.process, &w.expires); err != nil {
			rows.Close()
			return false, fmt.Errorf("read waiters of %q: %w", name, err)
		}
		queue = append(queue, w)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return false, fmt.Errorf("read waiters of %q: %w", name, err)
	}
	me := b.s.waiters.process()
	for _, w := range queue {
		if w.process == me {
			// This process's own: alive exactly when its call still waits.
			p := b.own(w.seq)
			if err := b.dropWaiter(w.seq); err != nil {
				return false, err
			}
			if p == nil || !p.state.CompareAndSwap(opPending, opTaken) {
				continue
			}
			r, err := b.grantTo(name, p.holder, p.owner, p.ttl, p.lockDelay)
			if err != nil {
				return false, err
			}
			*b.handed = append(*b.handed, p)
			b.handedRes = append(b.handedRes, result{grant: b.grant(name, r)})
			return true, nil
		}
		if time.Duration(w.expires) <= b.now && !legacyDeadWaiters.Load() {
			if err := b.dropWaiter(w.seq); err != nil { // its process is gone or stopped waiting
				return false, err
			}
			continue
		}
		r, err := b.grantTo(name, w.holder, w.owner, time.Duration(w.ttlMS)*time.Millisecond,
			time.Duration(w.delayMS)*time.Millisecond)
		if err != nil {
			return false, err
		}
		if _, err := b.s.w.markWaiter.ExecContext(b.ctx, int64(r.token), int64(r.expires), w.seq); err != nil {
			return false, fmt.Errorf("hand %q over: %w", name, err)
		}
		return true, nil
	}
	return false, nil
}

// roomForLease reports whether a hand-over may grant a new lease: the
// token space is not spent, and WithQuota's MaxLeases is not reached.
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

// grantTo grants name, known to be free, with the next token.
func (b *batch) grantTo(name, holder, owner string, ttl, lockDelay time.Duration) (row, error) {
	b.counter++
	r := row{holder: holder, owner: owner, token: b.counter, ttl: ttl, expires: b.now + ttl, lockDelay: lockDelay}
	if _, err := b.s.w.grant.ExecContext(b.ctx, name, r.holder, r.owner, int64(r.token),
		r.ttl.Milliseconds(), int64(b.now), int64(r.expires), r.lockDelay.Milliseconds()); err != nil {
		return row{}, fmt.Errorf("hand %q over: %w", name, err)
	}
	if b.q.liveKnown {
		b.q.live++
	}
	return r, nil
}

// poll is a queued call's turn (an opWait): the grant written into its row,
// if any (the row goes); else the row's refresh and an acquire that serves
// the queue if the name is free (the oldest waiter may be this call, whose
// parked op is then answered). A row that is gone (its call paused past its
// expiry) is queued again, at the end. A final poll withdraws the row and
// tries the acquire once more without queueing.
func (b *batch) poll(o *op) (result, error) {
	var tok, leaseExp int64
	err := b.s.w.waiterRow.QueryRowContext(b.ctx, o.seq).Scan(&tok, &leaseExp)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return result{}, fmt.Errorf("read waiter %d: %w", o.seq, err)
	}
	if found && tok > 0 {
		if err := b.dropWaiter(o.seq); err != nil {
			return result{}, err
		}
		r := row{holder: o.holder, owner: o.owner, token: token.Token(tok), ttl: o.ttl, expires: time.Duration(leaseExp)}
		return result{grant: b.grant(o.name, r)}, nil
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
		if _, err := b.s.w.refreshWaiter.ExecContext(b.ctx, int64(b.now+waiterTTL()), o.seq); err != nil {
			return result{}, fmt.Errorf("refresh waiter %d: %w", o.seq, err)
		}
		res, err := b.acquireInQuota(try)
		if err == nil && !errors.Is(res.err, lease.ErrHeld) {
			// Answered (the holder's own lease extended, or a refusal): a
			// row must live only while its call waits, or a later
			// release would grant the holder a lease nobody asked for.
			err = b.dropWaiter(o.seq)
		}
		return res, err
	}
	return b.acquireInQuota(try)
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

// queueCommitted tells the hub what the committed batch b did to the rows
// of this process, and starts the file watch once a row exists.
func (s *Store) queueCommitted(b *batch) {
	if len(b.enq) == 0 && len(b.drop) == 0 {
		return
	}
	s.waiters.committed(b.enq, b.drop)
	if len(b.enq) > 0 {
		s.startWatch()
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

// render turns a store-clock deadline into wall-clock time, outside a batch.
func (s *Store) render(deadline time.Duration) time.Time {
	return s.clock.Wall().Add(deadline - s.clock.Now()).UTC()
}
