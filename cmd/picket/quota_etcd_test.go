package main

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
)

// TestServeEtcdQuota (issue 20, item 6): -max-leases, -max-kv-keys and
// -max-kv-bytes with -etcd, on a real etcd cluster (in this process): the
// fourth lease is refused with lease.ErrQuota (507) while a holder's
// re-acquire and an acquire of a held name are answered as ever, and a
// release makes room; the third fenced key and a value that would take the
// keys past 80 bytes are refused, a stale write is answered stale, a
// smaller value passes; picket_leases_live counts the leases. Its mutant
// quota-off (storage/etcd's quota.go checking nothing) must fail it.
func TestServeEtcdQuota(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := startServe(t, "-etcd", strings.Join(c.Endpoints, ","), "-etcd-prefix", "quota",
		"-max-leases", "3", "-max-kv-keys", "2", "-max-kv-bytes", "80")
	cl := client(t, s.url)
	ctx := t.Context()
	acquire := func(name, holder string) (lease.Grant, error) {
		return cl.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute})
	}
	var gs []lease.Grant
	for _, n := range []string{"a", "b", "c"} {
		g, err := acquire(n, "holder-"+n)
		if err != nil {
			t.Fatalf("acquire %s: %v", n, err)
		}
		gs = append(gs, g)
	}
	if _, err := acquire("d", "holder-d"); !errors.Is(err, lease.ErrQuota) {
		t.Errorf("the fourth lease: %v, want lease.ErrQuota", err)
	}
	if g, err := acquire("a", "holder-a"); err != nil || g.Token != gs[0].Token {
		t.Errorf("the holder's re-acquire at the quota: %+v, %v", g, err)
	}
	if _, err := acquire("b", "someone-else"); !errors.Is(err, lease.ErrHeld) {
		t.Errorf("an acquire of a held name at the quota: %v, want lease.ErrHeld", err)
	}
	if live := metric(t, s.url, "picket_leases_live"); live != "3" {
		t.Errorf("picket_leases_live = %q, want 3", live)
	}
	if err := cl.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "holder-a", Token: gs[0].Token}); err != nil {
		t.Fatal(err)
	}
	d, err := acquire("d", "holder-d")
	if err != nil {
		t.Errorf("an acquire after a release made room: %v", err)
	}

	tok := d.Token
	if err := cl.PutFenced(ctx, "k1", []byte("one"), tok); err != nil {
		t.Fatal(err)
	}
	if err := cl.PutFenced(ctx, "k2", []byte("two"), tok); err != nil {
		t.Fatal(err)
	}
	if err := cl.PutFenced(ctx, "k3", []byte("three"), tok); !errors.Is(err, lease.ErrQuota) {
		t.Errorf("the third fenced key: %v, want lease.ErrQuota", err)
	}
	if err := cl.PutFenced(ctx, "k1", []byte(strings.Repeat("x", 75)), tok); !errors.Is(err, lease.ErrQuota) {
		t.Errorf("a value taking the keys past 80 bytes: %v, want lease.ErrQuota", err)
	}
	if err := cl.PutFenced(ctx, "k1", []byte(strings.Repeat("x", 75)), gs[1].Token); !errors.Is(err, token.ErrStale) {
		t.Errorf("a stale write over the quota: %v, want token.ErrStale", err)
	}
	if err := cl.PutFenced(ctx, "k1", []byte(strings.Repeat("x", 20)), tok); err != nil {
		t.Errorf("a value within the quota: %v", err)
	}
	if v, _, err := cl.GetFenced(ctx, "k1"); err != nil || len(v) != 20 {
		t.Errorf("GetFenced(k1) = %q, %v", v, err)
	}
}

// metric returns the value of the unlabelled series name on the server's
// /metrics, "" if it is not there.
func metric(t *testing.T, url, name string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
