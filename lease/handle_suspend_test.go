package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// The reproduction of issue 8, item 4: the machine sleeps for longer than
// the lease has left. The store's clock (CLOCK_BOOTTIME) counts the sleep
// and expires the lease; Go's monotonic clock, behind every timer, does
// not. Here one leasetest.Clock stands for the host's boot clock: the store
// reads it, and so does the handle (WithClock); advancing it is the
// suspend, during which Go's timers stand still. The handle must report
// the lease lost at once (Err) and promptly (Context), and never while the
// store grants the name to someone else. The control is a handle on Go's
// monotonic clock, as before: it keeps believing in the lease.

// suspendTTL is the lease's TTL; the suspend lasts longer than it.
const (
	suspendTTL = 30 * time.Second
	suspendFor = 40 * time.Second
	// promptly bounds how long after the resume the context may take to
	// end: the handle wakes every lease.WatchPeriod; the rest is slack for
	// a busy machine. The control's context would end only after a TTL.
	promptly = lease.WatchPeriod + 4*time.Second
)

func TestSuspendEndsLease(t *testing.T) {
	tests := []struct {
		name      string
		keepAlive bool
		watch     bool // wait for Context to end before asking Err (which ends it too)
	}{
		{"Err at once", false, false},
		{"Context promptly", false, true},
		{"Context promptly, keep-alive running", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := leasetest.NewClock()
			violations := checkSuspend(t, clk, tc.keepAlive, tc.watch, lease.WithClock(clk))
			for _, v := range violations {
				t.Error(v)
			}
		})
		t.Run("control/"+tc.name, func(t *testing.T) {
			clk := leasetest.NewClock()
			violations := checkSuspend(t, clk, tc.keepAlive, tc.watch, lease.WithClock(lease.GoClock()))
			if len(violations) == 0 {
				t.Error("control: a handle on Go's monotonic clock passed the check")
			}
			for _, v := range violations {
				t.Logf("control caught: %s", v)
			}
		})
	}
}

// openSuspendStore opens a SQLite store on clk in a new file.
func openSuspendStore(t *testing.T, clk lease.Clock) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "picket.db"), sqlite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// checkSuspend takes a 30 s lease on a store on clk through a Manager with
// opts, suspends the machine for 40 s (clk jumps, Go's timers do not), and
// returns every way the handle then believed in the lease the store had
// expired. With watch, it first waits for the context to end by itself;
// otherwise it asks Err at once.
func checkSuspend(t *testing.T, clk *leasetest.Clock, keepAlive, watch bool, opts ...lease.Option) []string {
	const name = "suspend/a"
	st := openSuspendStore(t, clk)
	l, err := manager(t, st, opts...).TryAcquire(t.Context(), name, suspendTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	if keepAlive {
		l.KeepAlive()
	}
	time.Sleep(10 * time.Millisecond) // let the watch and the keep-alive settle into their timers

	clk.Advance(suspendFor)
	resumed := time.Now()
	var violations []string
	if watch {
		select {
		case <-l.Context().Done():
			t.Logf("the context ended %v after the resume", time.Since(resumed).Round(time.Millisecond))
		case <-time.After(time.Until(resumed.Add(promptly))):
			violations = append(violations, fmt.Sprintf("Context() still live %v after the resume", promptly))
		}
	}
	if err := l.Err(); err == nil {
		violations = append(violations, fmt.Sprintf("Err() = nil right after a %v suspend of a %v lease (%v left)",
			suspendFor, suspendTTL, time.Until(l.Deadline()).Round(time.Millisecond)))
	} else if !errors.Is(err, lease.ErrLost) {
		t.Errorf("Err() after the suspend = %v, want ErrLost", err)
	}

	other, err := manager(t, st, lease.WithOwner("other")).TryAcquire(t.Context(), name, suspendTTL)
	if err != nil {
		t.Fatalf("the store did not expire the lease after the suspend: %v", err)
	}
	errNow := l.Err()
	other.Release(context.Background())
	if errNow == nil {
		violations = append(violations, fmt.Sprintf("token %d granted to another holder while the first handle's Err() was nil",
			other.Token()))
	}
	return violations
}

// TestShortSuspendKeepsLease: a suspend shorter than the time left ends
// nothing, and brings the deadline closer by its length.
func TestShortSuspendKeepsLease(t *testing.T) {
	clk := leasetest.NewClock()
	st := openSuspendStore(t, clk)
	l, err := manager(t, st, lease.WithClock(clk)).TryAcquire(t.Context(), "suspend/short", suspendTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	before := time.Until(l.Deadline())
	clk.Advance(10 * time.Second)
	after := time.Until(l.Deadline())
	if err := l.Err(); err != nil {
		t.Fatalf("Err() after a 10 s suspend of a 30 s lease = %v", err)
	}
	// The time left is read on the fake clock, which moved only for the
	// suspend; Deadline turns it into a time with time.Now, and time.Until
	// reads time.Now again, so the real time between those two readings
	// blurs each measurement by microseconds, either way (CI saw
	// 10.000027672 s when the second pair was the slower one).
	if d := before - after; d < 10*time.Second-500*time.Millisecond || d > 10*time.Second+500*time.Millisecond {
		t.Errorf("the suspend moved the deadline by %v, want 10 s", d)
	}
	if _, err := manager(t, st).TryAcquire(t.Context(), "suspend/short", suspendTTL); !errors.Is(err, lease.ErrHeld) {
		t.Errorf("another holder's TryAcquire = %v, want ErrHeld", err)
	}
	if err := l.Renew(t.Context(), 0); err != nil {
		t.Fatalf("Renew after the suspend: %v", err)
	}
	if left, want := time.Until(l.Deadline()), suspendTTL*9/10; left <= want-time.Second || left > want {
		t.Errorf("after a renewal %v left, want %v", left, want)
	}
}

// TestClockEpochEndsLease: a handle whose clock starts a new epoch (a new
// boot id, another time namespace) cannot compare its deadline with the
// clock any more, and gives the lease up.
func TestClockEpochEndsLease(t *testing.T) {
	clk := leasetest.NewClock()
	l, err := manager(t, newSpy(), lease.WithClock(clk)).TryAcquire(t.Context(), "epoch/a", suspendTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	clk.Reboot("boot-2", 2*time.Hour, time.Minute)
	if err := l.Err(); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Err() after a new epoch = %v, want ErrLost", err)
	}
	select {
	case <-l.Context().Done():
	case <-time.After(promptly):
		t.Errorf("Context() still live %v after a new epoch", promptly)
	}
}
