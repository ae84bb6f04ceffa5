package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// TestBackupRestore: picket backup copies a store a live server is using;
// the copy is refused until picket restore gives it a token floor, and then
// goes on above the floor. A cp of the live database file is refused too.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, out, restored := filepath.Join(dir, "picket.db"), filepath.Join(dir, "backup.db"), filepath.Join(dir, "restored.db")
	srv := startServer(t, db)
	c := client(t, srv.url)
	var highest uint64
	grant := func(name string) {
		g, err := c.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		highest = uint64(g.Token)
	}
	for _, n := range []string{"a", "b", "c"} {
		grant(n)
	}
	if r := runPicket(t, "backup", "-db", db, out); r.code != 0 || !strings.Contains(r.stdout, "counter 3") {
		t.Fatalf("picket backup: %+v", r)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want mode 0600", fi, err)
	}
	grant("d")
	grant("e") // after the backup: not in it

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"backup onto a file", []string{"backup", "-db", db, out}, exitUsage, "exists"},
		{"backup of no store", []string{"backup", "-db", filepath.Join(dir, "none.db"), filepath.Join(dir, "x.db")}, exitUsage, "does not exist"},
		{"the backup as a store", []string{"acquire", "-db", out, "-name", "x", "-ttl", "1m"}, exitError, "picket restore -token-floor"},
		{"restore without a floor", []string{"restore", out, restored}, exitUsage, "-token-floor N is required"},
		{"restore onto the live file", []string{"restore", "-token-floor", "99", out, db}, exitUsage, "exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runPicket(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("picket %v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
	r := runPicket(t, "restore", "-token-floor", strconv.FormatUint(highest, 10), out, restored)
	if r.code != 0 {
		t.Fatalf("picket restore: %+v", r)
	}
	g := decodeGrant(t, runPicket(t, "acquire", "-db", restored, "-name", "x", "-ttl", "1m"))
	if g.Token != highest+1 {
		t.Errorf("after restoring with floor %d: token %d, want %d", highest, g.Token, highest+1)
	}

	// cp picket.db while the server runs: the copy knows nothing of the
	// grants in the -wal, and is refused.
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "cp.db")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runPicket(t, "acquire", "-db", cp, "-name", "x", "-ttl", "1m"); r.code != exitError || !strings.Contains(r.stderr, "copied while in use") {
		t.Errorf("picket acquire on a cp of the live file: exit %d, stderr %q; want refused as copied while in use", r.code, r.stderr)
	}
}

// TestServeRefusesHardLink: the reproduction — a second picket
// serve on a hard link of the database the first serves exits at once,
// saying what to do, instead of granting the same tokens again.
func TestServeRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, a)
	if _, err := client(t, srv.url).Acquire(context.Background(), lease.AcquireRequest{Name: "job", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	r := runPicket(t, "serve", "-addr", "127.0.0.1:0", "-db", b)
	if r.code != exitError || !strings.Contains(r.stderr, "mount the directory, not the file") {
		t.Errorf("picket serve on the hard link: exit %d, stderr %q; want 1 and the fix", r.code, r.stderr)
	}
}
