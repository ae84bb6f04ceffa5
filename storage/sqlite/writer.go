package sqlite

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/picketlock/picket/internal/jitter"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

type opKind uint8

const (
	opAcquire opKind = iota + 1
	opRenew
	opRelease
	opPut
	opSweep
	opSync   // nothing but the epoch check every batch makes
	opDelete // a fenced key's value (kv.go)
	opWait   // a queued acquire's turn: its row's grant claimed, or the name tried again (queue.go)
	opLapse  // a look at a name granted to another process's waiter, once the grant may have lapsed
	opRevoke // an operator's revoke (revoke.go)
	opPrune  // the history past its retention (history.go)
	opMark   // a name marked watched (ended.go)
)

// The states of an op: a caller whose context ends while its op is pending
// abandons it and the writer skips it; once taken, the op is committed with
// its batch or not at all.
const (
	opPending int32 = iota
	opTaken
	opAbandoned
)

// op is one write waiting for the writer goroutine. Its inputs are
// validated before it is queued.
type op struct {
	kind   opKind
	name   string // lease name or fenced key
	holder string
	owner  string
	tok    token.Token
	ttl    time.Duration
	value  []byte

	lockDelay time.Duration        // an acquire's: kept with the lease it grants
	revoke    *lease.RevokeRequest // an opRevoke's reason and who asked
	// parked is, for a try of an Acquire that waits, the acquire op that
	// call keeps parked for a hand-over: once a try is answered anything
	// but "held", the writer abandons it in the same batch, so that no
	// later release hands the name to a call that already took effect.
	parked *op
	// seq is, for an opWait, the arrival sequence of the waiters row it
	// polls; final, that the wait is over: the row is withdrawn (unless it
	// was granted) and the acquire tried one last time.
	seq   int64
	final bool
	light bool // a waiting call's first try that will most likely queue (light.go: lightBatch)
	// full: a light batch found that the op changes what must survive a
	// power loss, which it never commits; the op runs again at once in a
	// full batch (light.go: deferFull).
	full bool

	// For a parked op (wait.go): row is the seq of its waiters row once a
	// batch committed it (0 before); wake says that the row may have been
	// granted by another process or its name freed (the bell, bell.go).
	row  atomic.Int64
	wake chan struct{}

	state atomic.Int32
	done  chan struct{} // closed when res is set
	res   result
}

// result is what an op produced in its batch.
type result struct {
	grant     lease.Grant
	n         int           // rows swept
	next      string        // for a sweep: the After of the next chunk ("" when done)
	untilFree time.Duration // for a held name: store-clock time until it may be free
	seq       int64         // the waiters row a held try queued its call in (0: none)
	err       error
}

func newOp(kind opKind) *op { return &op{kind: kind, done: make(chan struct{})} }

// submit queues o for the writer and waits for its result. If ctx ends
// first, submit returns ctx's error at once; an op already taken into a
// batch is still committed (or not) with it.
func (s *Store) submit(ctx context.Context, o *op) result {
	if f := s.failure.Load(); f != nil {
		return result{err: f}
	}
	if err := ctx.Err(); err != nil {
		return result{err: err}
	}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		return result{err: ctx.Err()}
	case <-s.closing:
		return result{err: ErrClosed}
	}
	select {
	case <-o.done:
		return o.res
	case <-ctx.Done():
		if !o.state.CompareAndSwap(opPending, opAbandoned) {
			// Taken into a batch: an answer that has already arrived
			// wins over the ended ctx (a definite answer, not an
			// unknown outcome).
			select {
			case <-o.done:
				return o.res
			default:
			}
			return result{err: storekit.Unknown(ctx.Err())} // committed or not: nobody will say
		}
		return result{err: ctx.Err()}
	case <-s.done:
		// The writer has returned; an op it had not taken stays queued
		// forever.
		if o.state.CompareAndSwap(opPending, opAbandoned) {
			return result{err: ErrClosed}
		}
		<-o.done
		return o.res
	}
}

// writeLoop is the writer goroutine: it takes the ops that are waiting, up
// to maxBatch, and commits them as one batch.
func (s *Store) writeLoop() {
	defer close(s.done)
	defer s.unarm()   // bell.go: before the read pool and the file's descriptor close
	defer s.unwatch() // watch_linux.go: likewise
	batch := make([]*op, 0, s.maxBatch)
	last := 0                               // the size of the previous batch
	wal := newWALKeeper(s.space.low.Load()) // wal.go
	defer wal.timer.Stop()
	for {
		select {
		case <-s.closing:
			s.drain()
			return
		default:
		}
		select {
		case <-s.closing:
			s.drain()
			return
		case <-wal.timer.C:
			s.walTick(wal)
			continue
		case o := <-s.ops:
			batch = take(batch[:0], o)
		}
	gather:
		for len(batch) < s.maxBatch {
			select {
			case o := <-s.ops:
				batch = take(batch, o)
			default:
				break gather
			}
		}
		gathered := len(batch)
		if len(batch) > 0 {
			batch = s.runBatch(batch, last)
			wal.wrote()
		}
		last = len(batch)
		clear(batch[:max(gathered, len(batch))]) // refused ops may have left the batch shorter
	}
}

// gatherWait bounds how long a batch waits for the callers of the one
// before it to come back.
const gatherWait = 100 * time.Microsecond

// joinBatch returns a running batch's join (exec.go): once the batch has
// applied its ops, it takes in the ops that arrived meanwhile (up to
// maxBatch), so that they ride in this commit instead of waiting for the
// next one. Without it, under steady load the callers split into two groups
// that alternate, each batch carrying half of them and paying a whole
// commit (an fsync) for it. The callers that the last commit answered come
// back over some hundred microseconds on a busy machine: the batch applies
// the first of them while the others arrive. (The writer used to wait for
// them, idle, before it began; joining measured 11 % more cycles at 16
// clients and 27 % more at 64: docs/performance.md.) When none is queued and the batch before carried
// more than one op (wait), it yields its thread until the queue stops
// growing (two yields without a new operation), until deadline at most;
// a lone caller never waits. Ops that arrive while the store is low on
// space are refused here, as before a batch (reserve.go).
func (s *Store) joinBatch(deadline time.Time, wait bool) func([]*op) []*op {
	return func(ops []*op) []*op {
		n, still := len(ops), 0
		for len(ops) < s.maxBatch {
			select {
			case o := <-s.ops:
				ops, still = take(ops, o), 0
				continue
			default:
			}
			if !wait || len(ops) > n || still == 2 || !time.Now().Before(deadline) {
				break
			}
			runtime.Gosched()
			still++
		}
		if len(ops) == n {
			return ops
		}
		return append(ops[:n], s.refuseWhileLow(ops[n:])...)
	}
}

func take(batch []*op, o *op) []*op {
	if o.state.CompareAndSwap(opPending, opTaken) {
		batch = append(batch, o)
	}
	return batch
}

// drain answers the ops still queued when the store closes.
func (s *Store) drain() {
	for {
		select {
		case o := <-s.ops:
			if o.state.CompareAndSwap(opPending, opTaken) {
				o.res = result{err: ErrClosed}
				close(o.done)
			}
		default:
			return
		}
	}
}

// runBatch commits batch, retrying while the file is locked by another
// process, and answers every op: with its own result after the commit, or
// all with the same error if the batch failed.
func (s *Store) runBatch(batch []*op, last int) []*op {
	answer := func(err error) {
		for _, o := range batch {
			o.res = result{err: err}
			close(o.done)
		}
	}
	if f := s.failure.Load(); f != nil {
		answer(f)
		return batch
	}
	if err := s.checkPlace(); err != nil { // moved.go
		answer(s.fail(err))
		return batch
	}
	if batch = s.refuseWhileLow(batch); len(batch) == 0 { // reserve.go
		return batch
	}
	start := time.Now()
	joinFn := s.joinBatch(start.Add(gatherWait), last > 1)
	var results, handedRes []result
	var handed, undone, uncertain []*op
	var commitErr error
	attempt := func() error {
		var err error
		handed = handed[:0]
		results, handedRes, err = s.execBatch(&batch, &handed, joinFn)
		switch {
		case err == nil:
		case errors.Is(err, errCommit):
			// COMMIT itself failed: the grants may be on disk.
			uncertain, commitErr = append(uncertain, handed...), err
		default:
			undone = append(undone, handed...)
		}
		return err
	}
	err := s.retryBusy(context.Background(), attempt)
	if err != nil && isFull(err) && len(undone)+len(uncertain) == 0 && s.onFull() {
		// The disk is full and the store just gave its reserve back
		// (reserve.go): the batch, rolled back whole, fits now.
		err = s.retryBusy(context.Background(), attempt)
	}
	for _, p := range undone { // their waiters wait on
		p.res = result{err: errHandOverUndone}
		close(p.done)
	}
	for _, p := range uncertain { // never "held": the grant may be committed
		p.res = result{err: storekit.Unknown(unavailable("hand-over: commit failed", commitErr))}
		close(p.done)
	}
	s.noteBatch(batch, results, err)
	if err != nil {
		s.logger.Log("msg", "batch failed", "err", err, "ops", len(batch))
		answer(s.batchFailed(err))
		return batch
	}
	took := time.Since(start)
	s.w.hook("answering")
	var full []*op
	for i, o := range batch {
		if results[i].err == errDeferred {
			o.full = true
			full = append(full, o)
			continue
		}
		o.res = results[i]
		close(o.done)
	}
	if len(handed) > 0 {
		s.w.hook("handing-over")
	}
	for i, p := range handed {
		p.res = handedRes[i]
		close(p.done)
	}
	if s.batchHook != nil {
		s.batchHook(len(batch)+len(handed)-len(full), took)
	}
	if len(full) > 0 {
		s.runBatch(full, 0) // light.go: deferFull
	}
	return batch
}

// batchFailed returns what the callers of a batch that failed with err are
// told. An I/O error or corruption makes the store fail closed (isFatal); a
// light batch whose sync failed after its COMMIT has failed it already and
// carries its *FailedError (finish). When COMMIT itself ran (errCommit)
// what the batch wrote may be on disk: its callers' error matches
// lease.ErrUnknown too. Any other error rolled the batch back.
func (s *Store) batchFailed(err error) error {
	var failed *FailedError
	if isFatal(err) {
		failed = s.fail(err)
	} else if !errors.As(err, &failed) {
		return unavailable("batch rolled back, nothing written", err)
	}
	if errors.Is(err, errCommit) {
		return storekit.Unknown(failed)
	}
	return failed
}

// A busy file is waited for on the Go side. SQLite's own busy handler
// polls the lock at growing intervals (1 ms up to 100 ms); a process that
// commits back to back leaves the lock free only for microseconds between
// its transactions, so a waiter that polls every 100 ms can starve for
// seconds. The writer connection therefore asks SQLite to wait only
// sqliteBusyWait, and retryBusy polls again every millisecond or two, for up
// to the store's busy timeout. It also covers the SQLITE_BUSY that SQLite
// returns without waiting (a WAL being recovered, a deadlock it detects).
const (
	sqliteBusyWait = 5 * time.Millisecond
	busyFirstSleep = 500 * time.Microsecond
	busyMaxSleep   = 2 * time.Millisecond
)

// retryBusy runs fn until it returns something other than a busy error or
// the busy timeout has passed, with short jittered sleeps between attempts.
func (s *Store) retryBusy(ctx context.Context, fn func() error) error {
	start := time.Now()
	sleep := busyFirstSleep
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Since(start) >= s.busy {
			return err
		}
		d := jitter.Between(sleep/2, sleep+sleep/2)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return err
		}
		sleep = min(2*sleep, busyMaxSleep)
	}
}

// rollback ends the writer's transaction after an error. SQLite may have
// rolled it back already (after SQLITE_FULL, an I/O error, ...), and then
// ROLLBACK fails harmlessly with SQLITE_ERROR; any other failure leaves the
// connection in an unknown state, and the store fails closed.
func (s *Store) rollback() {
	_, err := s.w.conn.ExecContext(context.Background(), "ROLLBACK")
	if err != nil && sqliteCode(err) != sqlite3.SQLITE_ERROR { // no transaction is active
		s.fail(err)
	}
}
