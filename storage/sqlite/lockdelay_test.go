package sqlite_test

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

// lockDelayCase is one lease granted through one opener of a file and
// tried through another after it expired.
type lockDelayCase struct {
	name         string
	grantorDelay time.Duration // WithLockDelay of the opener that grants
	otherDelay   time.Duration // WithLockDelay of the opener that tries after expiry
	request      time.Duration // AcquireRequest.LockDelay of the grant
	want         time.Duration // the lock-delay every opener must honour
}

var lockDelayCases = []lockDelayCase{
	{"the granting opener's default", 30 * time.Second, 0, 0, 30 * time.Second},
	{"the request's own", 0, 0, 30 * time.Second, 30 * time.Second},
	{"the request's own under the other's longer default", 0, 60 * time.Second, 5 * time.Second, 5 * time.Second},
}

// lockDelayViolation opens two stores on one new file with tc's options and
// one clock, grants a lease through the first, lets it expire and reports
// the first way the second opener departs from tc.want: a grant inside the
// lock-delay, a sweep of the lease's row, a held name after it, a wrong
// "free at".
func lockDelayViolation(t *testing.T, tc lockDelayCase) error {
	t.Helper()
	clk := leasetest.NewClock()
	path := filepath.Join(t.TempDir(), "picket.db")
	grantor := mustOpenPath(t, path, sqlite.WithClock(clk), sqlite.WithLockDelay(tc.grantorDelay))
	other := mustOpenPath(t, path, sqlite.WithClock(clk), sqlite.WithLockDelay(tc.otherDelay))
	ctx := context.Background()
	const ttl = 10 * time.Second
	g, err := grantor.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "first", Owner: "first", TTL: ttl, LockDelay: tc.request})
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	free := clk.Wall().Add(ttl + tc.want)
	try := func(when string) (lease.Grant, error) {
		g, err := other.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "second", Owner: "second", TTL: ttl})
		var held *lease.HeldError
		switch {
		case err == nil:
			return g, nil
		case !errors.As(err, &held):
			t.Fatalf("%s: acquire through the other opener: %v", when, err)
		case !held.Expires.Equal(free):
			return lease.Grant{}, fmt.Errorf("%s: held until %v, want %v (the lease's lock-delay %v)", when, held.Expires, free, tc.want)
		}
		return lease.Grant{}, err
	}

	clk.Advance(ttl)
	if _, err := other.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if g2, err := try("at expiry, after the other's sweep"); err == nil {
		return fmt.Errorf("the other opener granted token %d at expiry, inside the lease's %v lock-delay", g2.Token, tc.want)
	} else if !errors.Is(err, lease.ErrHeld) {
		return err
	}
	clk.Advance(tc.want - time.Millisecond)
	if g2, err := try("1ms before the lock-delay ends"); err == nil {
		return fmt.Errorf("the other opener granted token %d 1ms before the lease's %v lock-delay ended", g2.Token, tc.want)
	} else if !errors.Is(err, lease.ErrHeld) {
		return err
	}
	clk.Advance(time.Millisecond)
	g2, err := try("when the lock-delay ended")
	if err != nil {
		return fmt.Errorf("when the lease's %v lock-delay ended the other opener still says %v", tc.want, err)
	}
	if g2.Token != g.Token+1 {
		return fmt.Errorf("the other opener granted token %d, want %d", g2.Token, g.Token+1)
	}
	return nil
}

// TestLockDelayTwoOpeners: a lease's lock-delay (its request's, or its
// granting opener's default) is kept with it in the file and honoured by
// every opener, whatever that opener's own default: issue 8 item 5, where
// an opener without the option granted token 2 inside another's 30 s.
func TestLockDelayTwoOpeners(t *testing.T) {
	for _, tc := range lockDelayCases {
		t.Run(tc.name, func(t *testing.T) {
			if err := lockDelayViolation(t, tc); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMigrateToLockDelayColumn: a version 1 file (no lock_delay_ms) is
// brought to the current version with its leases and counter, each lease
// without a lock-delay.
func TestMigrateToLockDelayColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	db := openRawWritable(t, path)
	v1, err := schemaFile("schema/1.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{v1, "PRAGMA user_version = 1",
		"INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at) VALUES ('old', 'h', 'o', 7, 60000, 0, 9000000000000000)",
		"UPDATE counter SET value = 7"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	db.Close()
	s := mustOpenPath(t, path)
	info, err := s.Get(ctxT(t), "old")
	if err != nil || info.Token != 7 {
		t.Fatalf("Get(old) after the migration = %+v, %v; want token 7", info, err)
	}
	if g := acquire(t, s, "new", "h", time.Minute); g.Token != 8 {
		t.Errorf("next token %d, want 8", g.Token)
	}
	var delay int64
	if err := rawDB(t, path).QueryRow("SELECT lock_delay_ms FROM leases WHERE name = 'old'").Scan(&delay); err != nil || delay != 0 {
		t.Errorf("the old lease's lock_delay_ms = %d, %v; want 0", delay, err)
	}
}
