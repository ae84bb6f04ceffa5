package bench

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/picketlock/picket/lease"
)

// stepState is what the clients of one step share.
type stepState struct {
	s           *settings
	start, stop time.Time
	base        string          // prefix of the step's names
	hard        context.Context // ends DefaultGrace after stop: cancels what is in flight
	started     atomic.Int64    // operations started, bounded by maxOps
	lastRelease atomic.Int64    // hot: when the last release was sent, ns since start (0: none yet)
}

// clientStats is what one client saw; only its own goroutine touches it
// until the step ends.
type clientStats struct {
	hist                 Histogram
	grants, cycles, errs int64
	firstErr             error
	left                 []lease.Grant // held when the client stopped (kept only with Config.Cleanup)
	holder               string        // the client's holder
}

// keep remembers g as left held, if the run cleans up after itself.
func (st *stepState) keep(cs *clientStats, g lease.Grant) {
	if st.s.cleanup {
		cs.left = append(cs.left, g)
	}
}

// more reports whether the client may start another operation.
func (st *stepState) more() bool {
	return time.Now().Before(st.stop) && st.started.Add(1) <= st.s.maxOps && st.hard.Err() == nil
}

// failed counts err, unless the step's end cut the call short.
func (st *stepState) failed(cs *clientStats, ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	cs.errs++
	if cs.firstErr == nil {
		cs.firstErr = err
	}
}

func (st *stepState) request(name, holder string) lease.AcquireRequest {
	return lease.AcquireRequest{Name: name, Holder: holder, Owner: DefaultOwner, TTL: st.s.ttl}
}

// distinct: acquire and release the client's own name, over and over.
func (st *stepState) distinct(i int, cs *clientStats) {
	store := st.s.store
	req := st.request(st.base+"/"+itoa(i), lease.NewHolder())
	cs.holder = req.Holder
	for st.more() {
		t0 := time.Now()
		g, err := store.Acquire(st.hard, req)
		if err != nil {
			st.failed(cs, st.hard, err)
			continue
		}
		cs.hist.Record(time.Since(t0))
		cs.grants++
		if err := store.Release(st.hard, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
			st.failed(cs, st.hard, err)
			st.keep(cs, g)
			continue
		}
		cs.cycles++
	}
}

// fresh: acquire a new name each time, never released.
func (st *stepState) fresh(i int, cs *clientStats) {
	store := st.s.store
	prefix := []byte(st.base + "/" + itoa(i) + "/")
	req := st.request("", lease.NewHolder())
	cs.holder = req.Holder
	buf := make([]byte, 0, len(prefix)+20)
	for n := int64(0); st.more(); n++ {
		buf = strconv.AppendInt(append(buf[:0], prefix...), n, 10)
		req.Name = string(buf)
		t0 := time.Now()
		g, err := store.Acquire(st.hard, req)
		if err != nil {
			st.failed(cs, st.hard, err)
			continue
		}
		cs.hist.Record(time.Since(t0))
		cs.grants++
		st.keep(cs, g)
	}
}

// hot: every client acquires the step's one name, waiting for it until the
// step ends, and releases it at once. The latency recorded is the hand-over:
// from the moment the previous holder sent its release to the grant.
//
// The wait is bounded by the request (Wait: until the step's end), not by
// cutting the call off at the step's end: a call cut off still waits where
// the store runs (a server sees its client gone only later) and may be
// handed the name after the cleanup looked, a lease nobody releases. Left to
// its Wait, every call answers (the name, or "held") a moment after the
// step's end, and what it was granted is released like any other grant.
func (st *stepState) hot(cs *clientStats) {
	store := st.s.store
	req := st.request(st.base, lease.NewHolder())
	cs.holder = req.Holder
	for st.more() {
		left := time.Until(st.stop)
		if left <= 0 {
			return
		}
		req.Wait = min(left, lease.MaxWait)
		g, err := store.Acquire(st.hard, req)
		if err != nil {
			if !errors.Is(err, lease.ErrHeld) { // a wait that ran out is no failure
				st.failed(cs, st.hard, err)
			}
			continue
		}
		now := time.Since(st.start)
		if rel := st.lastRelease.Load(); rel > 0 {
			cs.hist.Record(now - time.Duration(rel))
		}
		cs.grants++
		st.lastRelease.Store(int64(max(time.Since(st.start), 1)))
		if err := store.Release(st.hard, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
			st.failed(cs, st.hard, err)
			st.keep(cs, g)
			continue
		}
		cs.cycles++
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
