package lease_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/picketlock/picket/lease"
)

func TestKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		l := acquire(t, st, "keepalive/a", 300*time.Millisecond)
		l.KeepAlive()
		l.KeepAlive() // a second call does nothing
		time.Sleep(10 * time.Second)
		if err := l.Err(); err != nil {
			t.Fatalf("lease ended under KeepAlive: %v", err)
		}
		// About every TTL/3 (100 ms), jittered down by up to a tenth.
		if n := st.renewCount(); n < 100 || n > 112 {
			t.Errorf("%d renewals in 10 s, want about 100", n)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		wantEnded(t, l, lease.ErrReleased)
		// The bubble fails the test if the keep-alive goroutine is left.
	})
}

// TestKeepAliveOutage: renewals that fail for less than the local deadline
// allows are retried sooner, and the lease survives.
func TestKeepAliveOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var (
			mu       sync.Mutex
			inOutage int
		)
		st := newSpy()
		st.renewErr = func(int) error {
			if d := time.Since(start); d >= time.Second && d < 1150*time.Millisecond {
				mu.Lock()
				inOutage++
				mu.Unlock()
				return errors.New("connection refused")
			}
			return nil
		}
		var logged []string
		logger := log.LoggerFunc(func(kv ...any) error {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprint(kv...))
			return nil
		})
		l := acquire(t, st, "outage/a", 300*time.Millisecond, lease.WithLogger(logger))
		l.KeepAlive()
		time.Sleep(2 * time.Second)
		if err := l.Err(); err != nil {
			t.Fatalf("lease ended in a 150 ms outage: %v", err)
		}
		mu.Lock()
		if inOutage < 3 {
			t.Errorf("%d renewals tried in a 150 ms outage, want at least 3 (retries sooner than TTL/3)", inOutage)
		}
		if len(logged) < inOutage {
			t.Errorf("%d log lines for %d failed renewals", len(logged), inOutage)
		}
		mu.Unlock()
		l.Release(t.Context())
	})
}

// TestKeepAliveGivesUp: when renewals keep failing, the lease ends at the
// local deadline, after a bounded number of tries, and the goroutine stops.
func TestKeepAliveGivesUp(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"unavailable", lease.ErrUnavailable},
		{"lost", lease.ErrLost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newSpy()
				st.renewErr = func(int) error { return fmt.Errorf("spy: %w", tc.err) }
				start := time.Now()
				l := acquire(t, st, "givesup/a", 300*time.Millisecond)
				l.KeepAlive()
				<-l.Context().Done()
				wantEnded(t, l, lease.ErrLost)
				took := time.Since(start)
				if tc.err == lease.ErrLost && took > 100*time.Millisecond {
					t.Errorf("a rejected renewal ended the lease after %v, want at the first renewal", took)
				}
				if tc.err != lease.ErrLost && took != 270*time.Millisecond {
					t.Errorf("lease ended after %v, want at the local deadline, 270ms", took)
				}
				if n := st.renewCount(); n > 20 {
					t.Errorf("%d renewals tried, want a bounded few", n)
				}
				synctest.Wait() // the keep-alive goroutine has gone, or the bubble fails the test
			})
		})
	}
}
