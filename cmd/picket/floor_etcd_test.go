//go:build linux

package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/token"
)

// wipe stops every member, removes its data and starts a new cluster at the
// same addresses: a cluster replaced (or restored from an old snapshot),
// whose revisions start again from the bottom.
func (c *etcdCluster) wipe() {
	c.t.Helper()
	for _, m := range c.members {
		c.kill(m)
		for i, a := range m.args {
			if a == "--data-dir" {
				if err := os.RemoveAll(m.args[i+1]); err != nil {
					c.t.Fatal(err)
				}
			}
		}
	}
	for _, m := range c.members {
		c.start(m)
	}
	c.waitHealthy(time.Minute)
}

// TestEtcdTokenFloor (issue 20, item 5): tokens are etcd revisions, so a
// cluster wiped and started again at the same address hands out tokens
// below the ones it handed out before, and the fenced KV accepts them. After
// picket restore -etcd E -token-floor N, every grant is above N, from a new
// store and from one that was running before the raise (its grant's
// comparison of the floor fails and it reads the new one), and the fenced
// KV refuses tokens up to N. Mutants: floor-ignored (the offset not added),
// floor-uncompared (a grant does not compare the floor).
func TestEtcdTokenFloor(t *testing.T) {
	c := startEtcdClusterOf(t, etcdBinary(t), 1, 100, 1000)
	endpoints := strings.Join(c.endpoints, ",")
	open := func() *etcd.Store {
		st, err := etcd.Open(c.endpoints, etcd.WithPrefix("floor"), etcd.WithRequestTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	ctx := t.Context()
	grant := func(st *etcd.Store, name string) token.Token {
		t.Helper()
		var g lease.Grant
		var err error
		for range 100 { // the first requests after a restart may find no leader yet
			if g, err = st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: lease.NewHolder(), TTL: 10 * time.Second}); !errors.Is(err, lease.ErrUnavailable) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("Acquire(%s): %v", name, err)
		}
		if err := st.Release(ctx, lease.ReleaseRequest{Name: name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatalf("Release(%s): %v", name, err)
		}
		return g.Token
	}

	before := open()
	var highest token.Token
	for i := range 30 {
		highest = grant(before, "job"+strconv.Itoa(i%3))
	}
	if err := before.PutFenced(ctx, "k", []byte("last"), highest); err != nil {
		t.Fatal(err)
	}
	t.Logf("before the wipe: token %d", highest)

	c.wipe()
	if tok := grant(open(), "job0"); tok >= highest {
		t.Fatalf("the wiped cluster granted token %d, not below %d: the test shows nothing", tok, highest)
	} else {
		t.Logf("after the wipe, without a floor: token %d, below %d", tok, highest)
	}

	r := runPicket(t, "restore", "-etcd", endpoints, "-etcd-prefix", "floor", "-token-floor", strconv.FormatUint(uint64(highest), 10))
	if r.code != 0 {
		t.Fatalf("picket restore -etcd: exit %d: %s", r.code, r.stderr)
	}
	t.Logf("picket restore: %s", strings.TrimSpace(r.stdout))
	if again := runPicket(t, "restore", "-etcd", endpoints, "-etcd-prefix", "floor"); again.code != exitUsage {
		t.Errorf("picket restore -etcd without -token-floor: exit %d, want %d", again.code, exitUsage)
	}

	for _, st := range []*etcd.Store{before, open()} { // before: its cached floor is the old one
		if tok := grant(st, "job1"); tok <= highest {
			t.Errorf("after the floor %d was raised, a grant got token %d", highest, tok)
		}
		err := st.PutFenced(ctx, "k", []byte("stale"), highest)
		if !errors.Is(err, token.ErrStale) {
			t.Errorf("PutFenced with token %d after the floor %d: %v, want token.ErrStale", highest, highest, err)
		}
	}
	fresh := open()
	tok := grant(fresh, "job2")
	g, err := fresh.Acquire(ctx, lease.AcquireRequest{Name: "held", Holder: "h", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := fresh.Get(ctx, "held"); err != nil || info.Token != g.Token || g.Token <= tok {
		t.Errorf("Get(held) = %+v, %v; want token %d above %d", info, err, g.Token, tok)
	}
	if _, err := before.Renew(ctx, lease.RenewRequest{Name: "held", Holder: "h", Token: g.Token}); err != nil {
		t.Errorf("Renew through a store that saw the raise: %v", err)
	}
	if err := fresh.PutFenced(ctx, "k", []byte("new"), g.Token); err != nil {
		t.Errorf("PutFenced with the new token %d: %v", g.Token, err)
	}
	if _, h, err := fresh.GetFenced(ctx, "k"); err != nil || h != g.Token {
		t.Errorf("GetFenced(k) = %d, %v; want %d", h, err, g.Token)
	}
	if err := before.Release(ctx, lease.ReleaseRequest{Name: "held", Holder: "h", Token: g.Token}); err != nil {
		t.Errorf("Release: %v", err)
	}
}
