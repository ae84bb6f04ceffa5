package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestRebootHoldsLeasesForFullTTL: a store opened after a reboot (a new
// clock epoch) counts every lease as held for its full TTL from the moment
// it opens: no competing grant before that, whatever the old deadlines said.
func TestRebootHoldsLeasesForFullTTL(t *testing.T) {
	clk := leasetest.NewClock()
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path, sqlite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 10 * time.Second
	g := acquire(t, s, "job", "old", ttl)
	clk.Advance(9 * time.Second) // one second left before the reboot
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The host was off for a minute and has been up for two hours since: on
	// the new boot clock the stored deadline (1h10s) is long past, but it
	// belongs to another epoch and means nothing.
	clk.Reboot("boot-2", 2*time.Hour, time.Minute)
	opened := clk.Wall()
	s = mustOpenPath(t, path, sqlite.WithClock(clk))
	ctx := ctxT(t)

	other := lease.AcquireRequest{Name: "job", Holder: "new", TTL: ttl}
	_, err = s.Acquire(ctx, other)
	var held *lease.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire right after the reboot: %v; want ErrHeld", err)
	}
	if want := opened.Add(ttl); !held.Expires.Equal(want) {
		t.Errorf("held until %v, want %v (full TTL from the reopen)", held.Expires, want)
	}
	clk.Advance(ttl - time.Millisecond)
	if _, err := s.Acquire(ctx, other); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Acquire 1 ms before the TTL from the reopen: %v; want ErrHeld", err)
	}
	clk.Advance(time.Millisecond)
	got, err := s.Acquire(ctx, other)
	if err != nil {
		t.Fatalf("Acquire once the TTL from the reopen passed: %v", err)
	}
	if got.Token != g.Token+1 {
		t.Errorf("token %d, want %d", got.Token, g.Token+1)
	}
}

// TestRebootWhileOpen: a clock that changes epoch under an open store (a
// test's clock can) gets the same rule at the next read or write.
func TestRebootWhileOpen(t *testing.T) {
	clk := leasetest.NewClock()
	s := mustOpen(t, sqlite.WithClock(clk))
	ctx := ctxT(t)
	const ttl = 10 * time.Second
	g := acquire(t, s, "job", "old", ttl)
	clk.Advance(5 * time.Second)
	clk.Reboot("boot-2", 2*time.Hour, time.Hour)
	info, err := s.Get(ctx, "job")
	if err != nil {
		t.Fatalf("Get after the reboot: %v", err)
	}
	if want := (lease.Info{Name: "job", Owner: g.Owner, Token: g.Token, TTL: ttl, Expires: clk.Wall().Add(ttl)}); !cmp.Equal(want, info) {
		t.Errorf("Get after the reboot (-want +got):\n%s", cmp.Diff(want, info))
	}
	// The holder survived (a client of a server that rebooted): its lease
	// is still its own.
	if _, err := s.Renew(ctx, lease.RenewRequest{Name: "job", Holder: "old", Token: g.Token}); err != nil {
		t.Errorf("Renew by the holder after the reboot: %v", err)
	}
}

// TestWallClockJumps: a wall clock stepped an hour forward or back changes
// nothing about who may acquire; only the rendering of deadlines follows it.
func TestWallClockJumps(t *testing.T) {
	clk := leasetest.NewClock()
	s := mustOpen(t, sqlite.WithClock(clk))
	ctx := ctxT(t)
	const ttl = 10 * time.Second
	g := acquire(t, s, "job", "a", ttl)
	other := lease.AcquireRequest{Name: "job", Holder: "b", TTL: ttl}
	for _, jump := range []time.Duration{time.Hour, -2 * time.Hour, time.Hour} {
		clk.JumpWall(jump)
		g.Expires = g.Expires.Add(jump)
		_, err := s.Acquire(ctx, other)
		var held *lease.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("after a wall jump of %v: Acquire: %v; want ErrHeld", jump, err)
		}
		if !held.Expires.Equal(g.Expires) {
			t.Errorf("after a wall jump of %v: held until %v, want %v", jump, held.Expires, g.Expires)
		}
		if info, err := s.Get(ctx, "job"); err != nil || !info.Expires.Equal(g.Expires) {
			t.Errorf("after a wall jump of %v: Get = %+v, %v; want expiry %v", jump, info, err, g.Expires)
		}
	}
	clk.Advance(ttl)
	if _, err := s.Acquire(ctx, other); err != nil {
		t.Errorf("after the TTL: %v", err)
	}
}

// TestSystemClock: the default clock is monotonic, in UTC for people, and
// on Linux its epoch is the boot id.
func TestSystemClock(t *testing.T) {
	c := sqlite.SystemClock()
	a := c.Now()
	time.Sleep(2 * time.Millisecond)
	if b := c.Now(); b-a < 2*time.Millisecond {
		t.Errorf("Now moved %v in a 2 ms sleep", b-a)
	}
	if loc := c.Wall().Location(); loc != time.UTC {
		t.Errorf("Wall is in %v, want UTC", loc)
	}
	if d := time.Since(c.Wall()); d < 0 || d > time.Minute {
		t.Errorf("Wall is %v away from time.Now", d)
	}
	if runtime.GOOS != "linux" {
		return
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	if want := strings.TrimSpace(string(b)); c.Epoch() != want || want == "" {
		t.Errorf("Epoch() = %q, want the boot id %q", c.Epoch(), want)
	}
	var uptime float64
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		var idle float64
		if _, err := fmt.Sscan(string(b), &uptime, &idle); err == nil {
			if d := c.Now() - time.Duration(uptime*float64(time.Second)); d < -time.Minute || d > time.Minute {
				t.Errorf("Now() = %v, /proc/uptime says %v", c.Now(), uptime)
			}
		}
	}
}
