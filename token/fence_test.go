package token_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
)

func TestFenceAdmit(t *testing.T) {
	type step struct {
		resource string
		token    token.Token
		stale    token.Token // if not zero: want a *StaleError with this Highest
		invalid  bool        // want ErrInvalid
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "increasing", steps: []step{{"r", 1, 0, false}, {"r", 2, 0, false}, {"r", 10, 0, false}}},
		{name: "equal token writes again", steps: []step{{"r", 3, 0, false}, {"r", 3, 0, false}, {"r", 3, 0, false}}},
		{name: "lower token is stale", steps: []step{{"r", 2, 0, false}, {"r", 1, 2, false}, {"r", 2, 0, false}}},
		{name: "stale does not lower highest", steps: []step{{"r", 5, 0, false}, {"r", 4, 5, false}, {"r", 4, 5, false}}},
		{name: "resources are independent", steps: []step{{"a", 9, 0, false}, {"b", 1, 0, false}, {"a", 2, 9, false}}},
		{name: "empty resource name", steps: []step{{"", 2, 0, false}, {"", 1, 2, false}}},
		{name: "zero is invalid, not stale", steps: []step{{"r", 0, 0, true}, {"r", 1, 0, false}, {"r", 0, 0, true}}},
		{name: "max", steps: []step{{"r", token.Max, 0, false}, {"r", token.Max, 0, false}}},
		{name: "above max", steps: []step{{"r", token.Max + 1, 0, true}, {"r", 1, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f token.Fence
			want := map[string]token.Token{}
			for i, s := range tt.steps {
				err := f.Admit(s.resource, s.token)
				var stale *token.StaleError
				switch {
				case s.invalid:
					if !errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrStale) {
						t.Fatalf("step %d: Admit(%q, %d) = %v, want ErrInvalid and not ErrStale", i, s.resource, s.token, err)
					}
				case s.stale != 0:
					if !errors.As(err, &stale) || !errors.Is(err, token.ErrStale) {
						t.Fatalf("step %d: Admit(%q, %d) = %v, want a *StaleError", i, s.resource, s.token, err)
					}
					wantErr := &token.StaleError{Resource: s.resource, Token: s.token, Highest: s.stale}
					if diff := cmp.Diff(wantErr, stale); diff != "" {
						t.Errorf("step %d: StaleError (-want +got):\n%s", i, diff)
					}
				default:
					if err != nil {
						t.Fatalf("step %d: Admit(%q, %d) = %v, want nil", i, s.resource, s.token, err)
					}
					want[s.resource] = s.token
				}
				if got := f.Highest(s.resource); got != want[s.resource] {
					t.Fatalf("step %d: Highest(%q) = %d, want %d", i, s.resource, got, want[s.resource])
				}
			}
		})
	}
}

func TestFenceHighestUnknown(t *testing.T) {
	var f token.Fence
	if got := f.Highest("nothing"); got != 0 {
		t.Errorf("Highest of an unseen resource = %d, want 0", got)
	}
}

func TestFenceDo(t *testing.T) {
	ctx := context.Background()
	var f token.Fence
	calls := 0
	write := func() error { calls++; return nil }

	if err := f.Do(ctx, "r", 2, write); err != nil {
		t.Fatalf("Do(2) = %v", err)
	}
	if err := f.Do(ctx, "r", 1, write); !errors.Is(err, token.ErrStale) {
		t.Fatalf("Do(1) after 2 = %v, want ErrStale", err)
	}
	if err := f.Do(ctx, "r", 0, write); !errors.Is(err, token.ErrZero) {
		t.Fatalf("Do(0) = %v, want ErrZero", err)
	}
	if calls != 1 {
		t.Errorf("write ran %d times, want 1 (only for the admitted token)", calls)
	}

	// write's error comes back unchanged; the token stays admitted.
	errWrite := errors.New("disk full")
	if err := f.Do(ctx, "r", 3, func() error { return errWrite }); err != errWrite {
		t.Fatalf("Do with a failing write = %v, want %v", err, errWrite)
	}
	if got := f.Highest("r"); got != 3 {
		t.Errorf("Highest after a failed write = %d, want 3", got)
	}
}

func TestFenceDoPanicReleasesTurn(t *testing.T) {
	var f token.Fence
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Do did not pass the panic on")
			}
		}()
		_ = f.Do(context.Background(), "r", 1, func() error { panic("boom") })
	}()
	// If the panic had kept the turn, this would block forever.
	if err := f.Admit("r", 1); err != nil {
		t.Fatalf("Admit after a panicking write = %v", err)
	}
}

// TestFenceDoHoldsTurn checks, without timing, what happens while a write runs
// under the fence: a newer writer waits (here: until its context ends), a
// stale one is turned away at once, other resources and Highest do not wait.
func TestFenceDoHoldsTurn(t *testing.T) {
	var f token.Fence
	inWrite, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.Do(context.Background(), "r", 5, func() error {
			close(inWrite)
			<-release
			return nil
		})
	}()
	<-inWrite

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	wrote := false
	if err := f.Do(cancelled, "r", 6, func() error { wrote = true; return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Do(6) while 5 writes, context cancelled = %v, want context.Canceled", err)
	}
	if wrote {
		t.Error("Do(6) ran its write while another write held the turn")
	}
	if err := f.Admit("r", 4); !errors.Is(err, token.ErrStale) {
		t.Errorf("Admit(4) while 5 writes = %v, want ErrStale", err)
	}
	if err := f.Admit("other", 1); err != nil {
		t.Errorf("Admit on another resource while r writes = %v", err)
	}
	if got := f.Highest("r"); got != 5 {
		t.Errorf("Highest while 5 writes = %d, want 5", got)
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Do(5) = %v", err)
	}
	if err := f.Admit("r", 6); err != nil {
		t.Fatalf("Admit(6) after the write = %v", err)
	}
}

// TestFenceConcurrent has many goroutines take increasing tokens and write
// through Do to a few resources. The per-resource histories are appended to
// without a lock of their own: the fence's turn is the only thing keeping the
// appends apart, so the race detector checks that Do excludes writers.
func TestFenceConcurrent(t *testing.T) {
	const (
		goroutines = 8
		perG       = 300
		resources  = 3
	)
	var (
		f        token.Fence
		next     atomic.Uint64
		history  [resources][]token.Token
		maxAdmit [resources]atomic.Uint64
		wg       sync.WaitGroup
	)
	ctx := context.Background()
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				r := (g + i) % resources
				name := string(rune('a' + r))
				tok := token.Token(next.Add(1))
				if i%4 == 0 { // some Admit-only callers, racing with the writers
					if err := f.Admit(name, tok); err == nil {
						raise(&maxAdmit[r], tok)
						if h := f.Highest(name); h < tok {
							t.Errorf("Highest(%q) = %d right after admitting %d", name, h, tok)
						}
					} else if !stale(err, tok) {
						t.Errorf("Admit(%q, %d) = %v", name, tok, err)
					}
					continue
				}
				err := f.Do(ctx, name, tok, func() error {
					history[r] = append(history[r], tok)
					runtime.Gosched() // let others queue for the turn
					return nil
				})
				if err == nil {
					raise(&maxAdmit[r], tok)
				} else if !stale(err, tok) {
					t.Errorf("Do(%q, %d) = %v", name, tok, err)
				}
			}
		})
	}
	wg.Wait()

	for r := range resources {
		name := string(rune('a' + r))
		if got, want := f.Highest(name), token.Token(maxAdmit[r].Load()); got != want {
			t.Errorf("Highest(%q) = %d, want the largest admitted token %d", name, got, want)
		}
		h := history[r]
		if len(h) == 0 {
			t.Errorf("resource %q: no write was admitted", name)
		}
		for i := 1; i < len(h); i++ {
			if h[i] < h[i-1] {
				t.Fatalf("resource %q: token %d written after %d", name, h[i], h[i-1])
			}
		}
	}
}

// stale reports whether err is a correct rejection of tok.
func stale(err error, tok token.Token) bool {
	var s *token.StaleError
	return errors.As(err, &s) && s.Token == tok && s.Highest > tok
}

// raise sets m to t if t is larger.
func raise(m *atomic.Uint64, t token.Token) {
	for {
		old := m.Load()
		if uint64(t) <= old || m.CompareAndSwap(old, uint64(t)) {
			return
		}
	}
}

// FuzzFence replays a sequence of Admit and Do calls, two bytes per call,
// against a plain model: the highest admitted token per resource.
func FuzzFence(f *testing.F) {
	f.Add([]byte{0x00, 5, 0x00, 3, 0x00, 5, 0x01, 1})
	f.Add([]byte{0x80, 2, 0x81, 2, 0x80, 1, 0x00, 0})
	f.Add([]byte{0x02, 255, 0x82, 254, 0x02, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var fence token.Fence
		model := map[string]token.Token{}
		for i := 0; i+1 < len(ops); i += 2 {
			useDo := ops[i]&0x80 != 0
			name := string(rune('a' + ops[i]%3))
			tok := token.Token(ops[i+1])
			wrote := false
			var err error
			if useDo {
				err = fence.Do(context.Background(), name, tok, func() error { wrote = true; return nil })
			} else {
				err = fence.Admit(name, tok)
			}
			switch {
			case tok == 0:
				if !errors.Is(err, token.ErrZero) || errors.Is(err, token.ErrStale) {
					t.Fatalf("op %d: token 0 gave %v, want ErrZero", i/2, err)
				}
			case tok < model[name]:
				var s *token.StaleError
				if !errors.As(err, &s) || s.Highest != model[name] || s.Token != tok || s.Resource != name {
					t.Fatalf("op %d: %q token %d below %d gave %v, want a *StaleError", i/2, name, tok, model[name], err)
				}
			default:
				if err != nil {
					t.Fatalf("op %d: %q token %d (highest %d) gave %v", i/2, name, tok, model[name], err)
				}
				model[name] = tok
			}
			if useDo && wrote != (err == nil) {
				t.Fatalf("op %d: write ran = %v with error %v", i/2, wrote, err)
			}
			if got := fence.Highest(name); got != model[name] {
				t.Fatalf("op %d: Highest(%q) = %d, want %d", i/2, name, got, model[name])
			}
		}
	})
}
