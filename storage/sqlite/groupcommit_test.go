package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// batchLog records the size of every committed batch.
type batchLog struct {
	mu    sync.Mutex
	sizes []int
}

func (l *batchLog) hook(size int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sizes = append(l.sizes, size)
}

func (l *batchLog) largest() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := 0
	for _, n := range l.sizes {
		m = max(m, n)
	}
	return m
}

// TestGroupCommit: many goroutines acquiring distinct names at once get
// distinct tokens, increasing for each goroutine, and their grants were
// committed in batches of more than one.
func TestGroupCommit(t *testing.T) {
	var batches batchLog
	s := mustOpen(t, sqlite.WithBatchHook(batches.hook))
	ctx := ctxT(t)
	const goroutines, rounds = 32, 30
	var mu sync.Mutex
	seen := map[token.Token]string{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			var last token.Token
			for i := range rounds {
				name := fmt.Sprintf("gc/%d/%d", g, i)
				got, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Minute})
				if err != nil {
					t.Errorf("Acquire(%q): %v", name, err)
					return
				}
				if got.Token <= last {
					t.Errorf("goroutine %d: token %d after %d", g, got.Token, last)
				}
				last = got.Token
				mu.Lock()
				if other, ok := seen[got.Token]; ok {
					t.Errorf("token %d granted for %s and %s", got.Token, other, name)
				}
				seen[got.Token] = name
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != goroutines*rounds {
		t.Errorf("%d distinct tokens, want %d", len(seen), goroutines*rounds)
	}
	if m := batches.largest(); m < 2 {
		t.Errorf("largest batch carried %d ops: no group commit", m)
	}
	if st := readFileState(t, s.Path()); st.Counter != goroutines*rounds || st.Leases != goroutines*rounds {
		t.Errorf("file holds %+v, want %d grants", st, goroutines*rounds)
	}
}

// blockedWriter holds the writer goroutine in the batch hook after its next
// commit, so that the ops queued meanwhile form one batch when it is let go.
type blockedWriter struct {
	batches batchLog
	mu      sync.Mutex
	gate    chan struct{} // while non-nil, the hook waits for it to close
	entered chan struct{} // the hook sends here before it waits
}

func (b *blockedWriter) hook(size int, took time.Duration) {
	b.batches.hook(size, took)
	b.mu.Lock()
	gate, entered := b.gate, b.entered
	b.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
}

// block stops the writer in the hook after it committed a sweep, and
// returns the function that lets it go.
func (b *blockedWriter) block(t *testing.T, s *sqlite.Store) (release func()) {
	t.Helper()
	gate, entered := make(chan struct{}), make(chan struct{})
	b.mu.Lock()
	b.gate, b.entered = gate, entered
	b.mu.Unlock()
	go s.Sweep(context.Background()) // its batch's hook blocks the writer
	<-entered
	return func() {
		b.mu.Lock()
		b.gate = nil
		b.mu.Unlock()
		close(gate)
	}
}

// TestOneNameOneBatch: two holders acquiring one name in one batch: the
// second op sees the first's grant, so exactly one wins.
func TestOneNameOneBatch(t *testing.T) {
	var bw blockedWriter
	s := mustOpen(t, sqlite.WithBatchHook(bw.hook))
	ctx := ctxT(t)
	for attempt := range 20 {
		name := fmt.Sprintf("race/%d", attempt)
		release := bw.block(t, s)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: fmt.Sprint("h", i), TTL: time.Minute})
			})
		}
		time.Sleep(20 * time.Millisecond) // let both acquires queue behind the blocked writer
		bw.batches.mu.Lock()
		n := len(bw.batches.sizes)
		bw.batches.mu.Unlock()
		release()
		wg.Wait()
		var won, held int
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, lease.ErrHeld):
				held++
			default:
				t.Errorf("Acquire(%q): %v", name, err)
			}
		}
		if won != 1 || held != 1 {
			t.Fatalf("two acquires of %q: %d won, %d found it held; want 1 and 1", name, won, held)
		}
		bw.batches.mu.Lock()
		together := len(bw.batches.sizes) > n && bw.batches.sizes[n] == 2
		bw.batches.mu.Unlock()
		if together {
			return
		}
	}
	t.Error("in 20 attempts the two acquires never shared a batch")
}

// TestCancelledCallerDoesNotBreakBatch: a caller whose context ends while
// its op waits for the writer gets the context's error and its op is
// skipped; the ops queued with it are committed.
func TestCancelledCallerDoesNotBreakBatch(t *testing.T) {
	var bw blockedWriter
	s := mustOpen(t, sqlite.WithBatchHook(bw.hook))
	ctx := ctxT(t)
	release := bw.block(t, s)

	cancelled, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() {
		_, err := s.Acquire(cancelled, lease.AcquireRequest{Name: "gone", Holder: "h", TTL: time.Minute})
		errs <- err
	}()
	grants := make(chan lease.Grant, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			name := fmt.Sprint("stays/", i)
			g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Minute})
			if err != nil {
				t.Errorf("Acquire(%q): %v", name, err)
			}
			grants <- g
		})
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire: %v; want context.Canceled", err)
	}
	release()
	wg.Wait()
	close(grants)
	for g := range grants {
		if _, err := s.Get(ctx, g.Name); err != nil {
			t.Errorf("Get(%q) after the batch: %v", g.Name, err)
		}
	}
	if info, err := s.Get(ctx, "gone"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get(gone) = %+v, %v; want ErrNotFound: the cancelled op was committed", info, err)
	}
}
