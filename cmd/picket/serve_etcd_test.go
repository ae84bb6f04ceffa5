package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
)

// TestServeEtcd runs two "picket serve -etcd" in front of one three-member
// cluster (in this process) and clients on both: a lease taken through one
// server is held through the other; a waiter on the second is woken by a
// release through the first and gets a higher token; the fenced KV rejects
// the first holder's late write through either server; "picket ls -etcd"
// sees the lease; /healthz turns 503 when the cluster is gone.
func TestServeEtcd(t *testing.T) {
	c := etcdtest.Start(t, 3)
	endpoints := strings.Join(c.Endpoints, ",")
	s1 := startServe(t, "-etcd", endpoints, "-etcd-prefix", "serve-test")
	s2 := startServe(t, "-etcd", endpoints, "-etcd-prefix", "serve-test")
	c1, c2 := client(t, s1.url), client(t, s2.url)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	a, err := c1.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "holder-a", Owner: "a", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire through server 1: %v", err)
	}
	if err := c1.PutFenced(ctx, "job/out", []byte("a"), a.Token); err != nil {
		t.Fatalf("put through server 1: %v", err)
	}
	_, err = c2.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "holder-b", Owner: "b", TTL: time.Minute})
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Owner != "a" {
		t.Fatalf("acquire through server 2 while held: %v, want held by \"a\"", err)
	}

	type result struct {
		g   lease.Grant
		err error
	}
	woken := make(chan result, 1)
	go func() {
		g, err := c2.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "holder-b", Owner: "b", TTL: time.Minute, Wait: 30 * time.Second})
		woken <- result{g, err}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := c1.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: "holder-a", Token: a.Token}); err != nil {
		t.Fatalf("release through server 1: %v", err)
	}
	var b lease.Grant
	select {
	case r := <-woken:
		if r.err != nil {
			t.Fatalf("waiting acquire through server 2: %v", r.err)
		}
		b = r.g
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter on server 2 was not woken by the release on server 1")
	}
	if b.Token <= a.Token {
		t.Errorf("token after the hand-over = %d, want above %d", b.Token, a.Token)
	}
	if err := c2.PutFenced(ctx, "job/out", []byte("b"), b.Token); err != nil {
		t.Fatalf("put through server 2: %v", err)
	}
	for i, c := range []interface {
		PutFenced(context.Context, string, []byte, token.Token) error
	}{c1, c2} {
		if err := c.PutFenced(ctx, "job/out", []byte("late"), a.Token); !errors.Is(err, token.ErrStale) {
			t.Errorf("the old holder's write through server %d: %v, want token.ErrStale", i+1, err)
		}
	}
	if v, tok, err := c1.GetFenced(ctx, "job/out"); err != nil || string(v) != "b" || tok != b.Token {
		t.Errorf("get through server 1 = %q token %d, %v; want \"b\" token %d", v, tok, err, b.Token)
	}

	ls := runPicket(t, "ls", "-etcd", endpoints, "-etcd-prefix", "serve-test")
	if ls.code != 0 || !strings.Contains(ls.stdout, "job") {
		t.Errorf("picket ls -etcd: exit %d, stdout %q, stderr %q; want the lease on job", ls.code, ls.stdout, ls.stderr)
	}

	if code := healthz(t, s2.url); code != http.StatusOK {
		t.Errorf("/healthz with the cluster up = %d, want 200", code)
	}
	c.Close()
	waitFor(t, 30*time.Second, "/healthz 503 without the cluster", func() bool {
		return healthz(t, s2.url) == http.StatusServiceUnavailable
	})
}

func healthz(t testing.TB, url string) int {
	t.Helper()
	hc := http.Client{Timeout: 15 * time.Second}
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
