package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// grantCall is one acquire of the cancellation test and what came of it.
type grantCall struct {
	name, holder string
	tok          token.Token // the token answered; zero when the outcome is unknown
	released     bool        // released, and the release was acknowledged
}

// cancelRun is what the goroutines of a cancellation run saw, and what the
// checks after it found wrong.
type cancelRun struct {
	mu       sync.Mutex
	acked    map[string]*grantCall // by holder (every acquire has its own)
	unknown  map[string]*grantCall // by holder: acquires whose context ended first
	held     int
	problems []string
}

func (r *cancelRun) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// TestCancelledGrants: many goroutines acquire (and release) with contexts
// cancelled at random moments (half of them, 0–3 ms after the call), on the
// store's real clock with short TTLs. A cancelled caller cannot know whether its grant
// was committed; the store must never lose track of one: every lease row in
// the file belongs to a call that either got the grant or had an unknown
// outcome, every token consumed belongs to such a call, tokens are unique
// and rise in each goroutine, the store stays healthy and leaks no
// goroutine, and the file passes PRAGMA integrity_check.
func TestCancelledGrants(t *testing.T) {
	st := openRealStore(t)
	run := runCancellations(t, st, st)
	for _, p := range run.problems {
		t.Error(p)
	}
	if len(run.acked) == 0 || len(run.unknown) == 0 {
		t.Errorf("%d grants and %d unknown outcomes: the run needs both to mean anything", len(run.acked), len(run.unknown))
	}
}

// TestCancelledGrantsControls runs the cancellation checks against stores
// broken on purpose and requires each to be caught.
func TestCancelledGrantsControls(t *testing.T) {
	tests := []struct {
		name   string
		broken func(t *testing.T, st *sqlite.Store) lease.Store
		want   []string // one of these in one of the problems found
	}{
		{"a committed grant reported as held",
			func(_ *testing.T, st *sqlite.Store) lease.Store { return &hiddenGrant{Store: st} },
			[]string{"belongs to no call", "consumed during the run"}},
		{"counter repeats",
			func(_ *testing.T, st *sqlite.Store) lease.Store { return newRepeatingCounter(st) },
			[]string{"acknowledged to"}},
		{"a goroutine left per cancelled call",
			func(t *testing.T, st *sqlite.Store) lease.Store {
				stop := make(chan struct{})
				t.Cleanup(func() { close(stop) })
				return &leaky{Store: st, stop: stop}
			},
			[]string{"goroutines left"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openRealStore(t)
			run := runCancellations(t, tc.broken(t, st), st)
			t.Logf("problems found: %d", len(run.problems))
			for i, p := range run.problems {
				if i < 3 {
					t.Logf("  %s", firstLine(p))
				}
				for _, w := range tc.want {
					if strings.Contains(p, w) {
						return
					}
				}
			}
			t.Errorf("no problem mentions any of %q", tc.want)
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// openRealStore opens a store on its real clock in a new file under
// t.TempDir().
func openRealStore(t *testing.T) *sqlite.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "picket.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// runCancellations runs the cancelled acquires through use (st, or a broken
// store over it), then checks the store and, once closed, its file. It
// returns what it saw and the problems found.
func runCancellations(t *testing.T, use lease.Store, st *sqlite.Store) *cancelRun {
	goroutines, rounds, budget := 16, 150, 2*time.Second
	switch {
	case soak():
		rounds, budget = 50000, 60*time.Second
	case testing.Short():
		rounds = 50
	}
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("cancel/%d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget+time.Minute)
	defer cancel()

	// Warm up the connections, then count goroutines.
	warm := mustGrant(t, st, "warm", "warm-holder")
	for range 8 {
		if _, err := st.Get(ctx, "warm"); err != nil {
			t.Fatal(err)
		}
	}
	base := runtime.NumGoroutine()

	run := &cancelRun{acked: map[string]*grantCall{}, unknown: map[string]*grantCall{}}
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var last token.Token
			for i := 0; i < rounds && time.Since(start) < budget; i++ {
				tok := run.attempt(t, ctx, use, rng, names[rng.IntN(len(names))], fmt.Sprintf("g%d-%d", g, i))
				if tok == 0 {
					continue
				}
				if tok <= last {
					run.problem("goroutine %d: token %d after %d", g, tok, last)
				}
				last = tok
			}
		})
	}
	wg.Wait()
	t.Logf("%d goroutines in %v: %d grants, %d unknown outcomes, %d held",
		goroutines, time.Since(start).Round(time.Millisecond), len(run.acked), len(run.unknown), run.held)

	// The pool is healthy: Health, reads and further grants work.
	flush(t, st)
	if err := st.Health(ctx); err != nil {
		run.problem("Health after the run: %v", err)
	}
	after := mustGrant(t, st, "after", "after-holder")
	if _, err := st.Get(ctx, "after"); err != nil {
		run.problem("Get after the run: %v", err)
	}
	for _, c := range run.acked {
		if c.tok >= after.Token {
			run.problem("the grant after the run has token %d, not above %d granted during it", after.Token, c.tok)
		}
	}
	if n := settleGoroutines(base); n > base {
		buf := make([]byte, 1<<16)
		run.problem("%d goroutines left, %d before the run:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}

	closeAndCheckFile(t, st)
	run.checkFile(t, st.Path(), warm.Token, after)
	return run
}

func mustGrant(t *testing.T, st lease.Store, name, holder string) lease.Grant {
	t.Helper()
	g, err := st.Acquire(context.Background(), lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return g
}

// randomCancel returns, for half the calls, a context cancelled 0–3 ms from
// now (sometimes at once), at a random moment of whatever the call is doing
// by then; the other half are not cancelled.
func randomCancel(parent context.Context, rng *rand.Rand) (context.Context, context.CancelFunc) {
	if rng.IntN(2) == 0 {
		return context.WithTimeout(parent, 10*time.Second)
	}
	ctx, cancel := context.WithCancel(parent)
	if rng.IntN(10) == 0 {
		cancel()
		return ctx, cancel
	}
	timer := time.AfterFunc(time.Duration(rng.Int64N(int64(3*time.Millisecond))), cancel)
	return ctx, func() { timer.Stop(); cancel() }
}

// attempt makes one acquire with a randomly cancelled context and, if it was
// granted, releases it (acknowledged, cancelled too, or not at all). It
// returns the token granted, or zero.
func (r *cancelRun) attempt(t *testing.T, parent context.Context, st lease.Store, rng *rand.Rand, name, holder string) token.Token {
	req := lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Duration(10+rng.IntN(20)) * time.Millisecond}
	if rng.IntN(4) == 0 {
		req.Wait = 5 * time.Millisecond
	}
	ctx, cancel := randomCancel(parent, rng)
	g, err := st.Acquire(ctx, req)
	cancel()
	c := &grantCall{name: name, holder: holder, tok: g.Token}
	r.mu.Lock()
	switch {
	case err == nil:
		r.acked[holder] = c
	case errors.Is(err, lease.ErrHeld):
		r.held++
	case errors.Is(err, context.Canceled):
		c.tok = 0
		r.unknown[holder] = c
	default:
		t.Errorf("Acquire(%q): %v", name, err)
	}
	r.mu.Unlock()
	if err != nil {
		return 0
	}
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4:
		rctx, rcancel := context.WithTimeout(parent, 10*time.Second)
		defer rcancel()
		if err := st.Release(rctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token}); err == nil {
			r.mu.Lock()
			c.released = true
			r.mu.Unlock()
		} else if !errors.Is(err, lease.ErrLost) { // it may have expired
			t.Errorf("Release(%q, %d): %v", name, g.Token, err)
		}
	case 5, 6, 7:
		rctx, rcancel := randomCancel(parent, rng)
		defer rcancel()
		err := st.Release(rctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token})
		if err != nil && !errors.Is(err, lease.ErrLost) && !errors.Is(err, context.Canceled) {
			t.Errorf("Release(%q, %d): %v", name, g.Token, err)
		}
	}
	return g.Token
}
