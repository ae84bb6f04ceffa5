package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestEpochOf: the epoch is the boot id alone without a time namespace
// offset (so files keep their epoch across the upgrade), and names the
// offset when there is one.
func TestEpochOf(t *testing.T) {
	for _, tc := range []struct {
		name, offsets, want string
	}{
		{"no time namespace file", "", "b00t"},
		{"zero offsets", "monotonic           0         0\nboottime            0         0\n", "b00t"},
		{"boottime offset", "monotonic           0         0\nboottime         3600         0\n", "b00t boottime 3600 0"},
		{"monotonic offset only", "monotonic         100         0\nboottime            0         0\n", "b00t"},
		{"negative nanoseconds", "boottime -5 -250\n", "b00t boottime -5 -250"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sqlite.EpochOf("b00t", sqlite.BoottimeOffset(tc.offsets))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("epoch (-want +got):\n%s", diff)
			}
		})
	}
}

// epochViolation opens two stores on one new file, then moves the second's
// clock into another epoch whose boot clock reads an hour more, as a
// process in a time namespace (unshare -T --boottime 3600) does (a second
// live opener in another epoch is refused at Open: TestEpochOtherOpener).
// The second writes first, so the file was last in its epoch when the first
// grants a 10-minute lease; it reports the first way the second then
// departs from "held for its full TTL": a grant, or a Get that does not
// show the lease.
func epochViolation(t *testing.T) error {
	t.Helper()
	host := leasetest.NewClock()
	ns := leasetest.NewClock()
	path := filepath.Join(t.TempDir(), "picket.db")
	inNS := mustOpenPath(t, path, sqlite.WithClock(ns))
	onHost := mustOpenPath(t, path, sqlite.WithClock(host))
	ns.Reboot("boot-1 boottime 3600 0", host.Now()+time.Hour, 0)
	ctx := context.Background()
	const ttl = 10 * time.Minute
	if _, err := inNS.Acquire(ctx, lease.AcquireRequest{Name: "warm-up", Holder: "ns", TTL: time.Second}); err != nil {
		t.Fatalf("the namespace's first write: %v", err)
	}
	g, err := onHost.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "host", Owner: "host", TTL: ttl})
	if err != nil {
		t.Fatalf("grant on the host: %v", err)
	}
	var getErr error
	if info, err := inNS.Get(ctx, "job"); err != nil || info.Token != g.Token {
		getErr = fmt.Errorf("Get in the namespace = %+v, %v; want the host's token %d", info, err, g.Token)
	}
	req := lease.AcquireRequest{Name: "job", Holder: "ns", Owner: "ns", TTL: ttl}
	if g2, err := inNS.Acquire(ctx, req); err == nil {
		return errors.Join(getErr, fmt.Errorf("the namespace's opener was granted token %d while the host held token %d for %v more", g2.Token, g.Token, ttl))
	} else if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire in the namespace: %v", err)
	}
	if getErr != nil {
		return getErr
	}
	// Both clocks move on together; the host renews once in between (its
	// batch finds the namespace's epoch and applies the reboot rule too).
	host.Advance(ttl / 2)
	ns.Advance(ttl / 2)
	if _, err := onHost.Renew(ctx, lease.RenewRequest{Name: "job", Holder: "host", Token: g.Token}); err != nil {
		return fmt.Errorf("the host's renew: %v", err)
	}
	host.Advance(ttl - time.Millisecond)
	ns.Advance(ttl - time.Millisecond)
	if g2, err := inNS.Acquire(ctx, req); err == nil {
		return fmt.Errorf("the namespace's opener was granted token %d 1ms before the renewed lease's end", g2.Token)
	} else if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire in the namespace: %v", err)
	}
	// That acquire found the host's epoch and held the lease for its full
	// TTL from then (the reboot rule: liveness, not safety, pays for clocks
	// that disagree); once that has passed, the name is free.
	host.Advance(ttl)
	ns.Advance(ttl)
	if _, err := inNS.Acquire(ctx, req); err != nil {
		return fmt.Errorf("the lease never ends for the namespace's opener: %v", err)
	}
	return nil
}

// TestEpochTwoOpenersClocksDisagree: two openers of one file whose clocks
// are in different epochs (issue 8 item 2: a process in a time namespace
// shares the boot id, not the boot clock) never grant a name the other
// holds: each batch compares the file's epoch with its clock's and applies
// the reboot rule when they differ; reads do too.
func TestEpochTwoOpenersClocksDisagree(t *testing.T) {
	if err := epochViolation(t); err != nil {
		t.Fatal(err)
	}
}

// TestEpochOtherOpener: a store whose clock is in another epoch than a
// live opener of the file is refused at Open (ErrOtherEpoch), in this
// process as in another (TestEpochOtherOpenerProcesses); once the other
// has closed, it opens and applies the reboot rule.
func TestEpochOtherOpener(t *testing.T) {
	host := leasetest.NewClock()
	ns := leasetest.NewClock()
	ns.Reboot("boot-1 boottime 3600 0", host.Now()+time.Hour, 0)
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path, sqlite.WithClock(host))
	if err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "job", "host", time.Minute)
	if s2, err := sqlite.Open(path, sqlite.WithClock(ns)); !errors.Is(err, sqlite.ErrOtherEpoch) {
		if err == nil {
			s2.Close()
		}
		t.Fatalf("Open in another epoch beside a live opener: %v; want ErrOtherEpoch", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpenPath(t, path, sqlite.WithClock(ns))
	if _, err := s2.Acquire(ctxT(t), lease.AcquireRequest{Name: "job", Holder: "ns", TTL: time.Minute}); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Acquire after the other epoch's opener closed: %v; want held (the reboot rule)", err)
	}
}
