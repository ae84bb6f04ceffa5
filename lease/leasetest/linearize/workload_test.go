package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/token"
)

// soak reports whether the long form was asked for (PICKET_SOAK=1).
func soak() bool { return os.Getenv("PICKET_SOAK") != "" }

// workload is a random mix of acquire, renew, release, get, fenced put and
// fenced get by several goroutines on a few names and keys, in phases: the
// store's clock stands still during a phase and moves between phases, when
// no call is outstanding (see the package doc on time).
type workload struct {
	workers  int
	phases   int           // at most this many phases
	perPhase int           // calls per worker per phase
	budget   time.Duration // and no more phases after this much wall time
	cancel   float64       // the share of calls whose context ends after 0–3 ms
	names    []string
	keys     []string // no keys: the store has no fenced KV
	ttls     []time.Duration
	seed     uint64
}

func defaultWorkload(seed uint64) workload {
	w := workload{
		workers:  8,
		phases:   25,
		perPhase: 10,
		budget:   2 * time.Second,
		cancel:   0.15,
		// Names and keys that a path must escape, as well as plain ones.
		names: []string{"lin/a", "lin/ä b%2F", "lin/../c"},
		keys:  []string{"kv/x", "kv/y z%?"},
		ttls:  ttls,
		seed:  seed,
	}
	switch {
	case soak():
		w.phases, w.budget = 2000, 60*time.Second
	case testing.Short():
		w.phases = 12
	}
	return w
}

// target is what a workload runs against.
type target struct {
	clock *leasetest.Clock
	// begin returns the store (and fenced KV) the workers use in a phase.
	begin func(t testing.TB) (lease.Store, linearize.KV)
	// of, if set, returns the store worker i uses instead (several stores
	// on one file).
	of func(i int) (lease.Store, linearize.KV)
	// settle runs after every worker of a phase returned: it waits until the
	// store has finished whatever cancelled callers left behind.
	settle func(t testing.TB)
}

// The TTLs and clock steps are multiples of 250 ms, so that a step often
// lands exactly on a deadline.
var (
	ttls  = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}
	steps = []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
)

// stats counts the answers a workload got.
type stats struct {
	mu     sync.Mutex
	counts map[string]int
}

func (s *stats) add(kind string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, lease.ErrHeld):
		outcome = "held"
	case errors.Is(err, lease.ErrLost):
		outcome = "lost"
	case errors.Is(err, lease.ErrNotFound):
		outcome = "not-found"
	case errors.Is(err, token.ErrStale):
		outcome = "stale"
	default:
		outcome = "unknown"
	}
	s.counts[kind+" "+outcome]++
}

func (s *stats) get(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[key]
}

// run runs w against tg, recording into rec, and returns the counts of
// answers. Every loop is bounded in count and in time.
func (w workload) run(t testing.TB, tg target, rec *linearize.Recorder) *stats {
	t.Helper()
	st := &stats{}
	workers := make([]*worker, w.workers)
	for i := range workers {
		workers[i] = &worker{id: i, w: w, rng: rand.New(rand.NewPCG(w.seed, uint64(i))), st: st}
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.budget+time.Minute)
	defer cancel()
	start := time.Now()
	rng := rand.New(rand.NewPCG(w.seed, 1<<32))
	phases := 0
	for phases < w.phases && time.Since(start) < w.budget {
		store, kv := tg.begin(t)
		var wg sync.WaitGroup
		for _, wk := range workers {
			if tg.of != nil {
				store, kv = tg.of(wk.id)
			}
			c := rec.Client(wk.id, store, kv)
			wg.Go(func() { wk.phase(ctx, c) })
		}
		wg.Wait()
		tg.settle(t)
		rec.Settle()
		tg.clock.Advance(steps[rng.IntN(len(steps))])
		phases++
	}
	t.Logf("%d phases of %d workers in %v: %v", phases, w.workers, time.Since(start).Round(time.Millisecond), st.counts)
	return st
}

// worker is one goroutine of a workload, with what it believes it holds.
type worker struct {
	id     int
	w      workload
	rng    *rand.Rand
	st     *stats
	grants []lease.Grant // grants it may still hold
	past   []token.Token // every token it was granted
	seq    int
}

func (wk *worker) phase(ctx context.Context, c *linearize.Client) {
	for range wk.w.perPhase {
		wk.call(ctx, c)
	}
}

// callContext returns the context of one call: for a share of calls it ends
// after a random 0–3 ms, at a random moment of the call.
func (wk *worker) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if wk.rng.Float64() < wk.w.cancel {
		return context.WithTimeout(ctx, time.Duration(wk.rng.Int64N(int64(3*time.Millisecond))))
	}
	return context.WithTimeout(ctx, 10*time.Second)
}

// holder returns a holder secret: mostly one of the worker's own two, but
// sometimes one shared by every worker, so that several goroutines act as
// one holder (a same-holder re-acquire from elsewhere).
func (wk *worker) holder() string {
	if wk.rng.IntN(5) == 0 {
		return fmt.Sprintf("shared-%d", wk.rng.IntN(2))
	}
	return fmt.Sprintf("w%d-h%d", wk.id, wk.rng.IntN(2))
}

func (wk *worker) call(parent context.Context, c *linearize.Client) {
	ctx, cancel := wk.callContext(parent)
	defer cancel()
	rng := wk.rng
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	switch n := rng.IntN(100); {
	case n < 35:
		req := lease.AcquireRequest{Name: pick(wk.w.names), Holder: wk.holder(), TTL: wk.w.ttls[rng.IntN(len(wk.w.ttls))]}
		req.Owner = "owner-" + req.Holder
		if rng.IntN(10) == 0 {
			req.Wait = time.Duration(1+rng.IntN(20)) * time.Millisecond
		}
		g, err := c.Acquire(ctx, req)
		wk.st.add("acquire", err)
		if err == nil {
			wk.forget(g.Name, g.Holder)
			wk.grants = append(wk.grants, g)
			wk.past = append(wk.past, g.Token)
		}
	case n < 50 && len(wk.grants) > 0:
		g := wk.grants[rng.IntN(len(wk.grants))]
		var ttl time.Duration
		if rng.IntN(2) == 0 {
			ttl = wk.w.ttls[rng.IntN(len(wk.w.ttls))]
		}
		_, err := c.Renew(ctx, lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token, TTL: ttl})
		wk.st.add("renew", err)
		if errors.Is(err, lease.ErrLost) {
			wk.forget(g.Name, g.Holder)
		}
	case n < 62 && len(wk.grants) > 0:
		g := wk.grants[rng.IntN(len(wk.grants))]
		err := c.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token})
		wk.st.add("release", err)
		if err == nil || errors.Is(err, lease.ErrLost) {
			wk.forget(g.Name, g.Holder)
		}
	case n < 82 && len(wk.past) > 0 && len(wk.w.keys) > 0:
		// Mostly the newest token, sometimes an old one: a paused holder
		// writing late.
		tok := wk.past[len(wk.past)-1]
		if rng.IntN(3) == 0 {
			tok = wk.past[rng.IntN(len(wk.past))]
		}
		wk.seq++
		err := c.PutFenced(ctx, pick(wk.w.keys), fmt.Appendf(nil, "w%d-%d", wk.id, wk.seq), tok)
		wk.st.add("put", err)
	case n < 91 && len(wk.w.keys) > 0:
		_, _, err := c.GetFenced(ctx, pick(wk.w.keys))
		wk.st.add("get-fenced", err)
	default:
		_, err := c.Get(ctx, pick(wk.w.names))
		wk.st.add("get", err)
	}
}

// forget drops the worker's grant of name to holder.
func (wk *worker) forget(name, holder string) {
	for i, g := range wk.grants {
		if g.Name == name && g.Holder == holder {
			wk.grants = append(wk.grants[:i], wk.grants[i+1:]...)
			return
		}
	}
}
