package etcd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestFencedKV: a write is accepted with a token at least the highest the
// key has seen and rejected (a *token.StaleError with the highest) below it;
// a delete keeps the highest token, so a late lower write stays stale; a
// token above the cluster's revision was never issued and is refused.
func TestFencedKV(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	ctx := t.Context()
	var toks []token.Token
	for i := range 3 {
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: "kv/lock", Holder: holder(i), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, g.Token)
		if err := st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatal(err)
		}
	}
	low, mid, high := toks[0], toks[1], toks[2]

	type step struct {
		name  string
		do    func() error
		stale token.Token // the highest a stale answer must carry; 0: no stale answer
		want  error       // else the error it must match (nil: success)
	}
	put := func(tok token.Token, v string) func() error {
		return func() error { return st.PutFenced(ctx, "res", []byte(v), tok) }
	}
	del := func(tok token.Token) func() error { return func() error { return st.DeleteFenced(ctx, "res", tok) } }
	steps := []step{
		{"first write", put(mid, "a"), 0, nil},
		{"same token again", put(mid, "b"), 0, nil},
		{"lower token", put(low, "stale"), mid, nil},
		{"higher token", put(high, "c"), 0, nil},
		{"the old holder again", put(mid, "stale"), high, nil},
		{"delete with a lower token", del(mid), high, nil},
		{"delete", del(high), 0, nil},
		{"delete again", del(high), 0, nil},
		{"write below the kept token", put(low, "stale"), high, nil},
		{"never issued", put(token.Max, "forged"), 0, lease.ErrInvalid},
		{"token zero", put(0, "x"), 0, lease.ErrInvalid},
		{"delete a key never written", func() error { return st.DeleteFenced(ctx, "other", mid) }, 0, nil},
		{"write below the token a delete recorded", func() error { return st.PutFenced(ctx, "other", nil, low) }, mid, nil},
		{"rewrite after delete", put(high, "d"), 0, nil},
	}
	for _, s := range steps {
		err := s.do()
		var se *token.StaleError
		switch {
		case s.stale != 0:
			if !errors.As(err, &se) || !errors.Is(err, token.ErrStale) || se.Highest != s.stale {
				t.Errorf("%s: got %v, want a *token.StaleError with highest %d", s.name, err, s.stale)
			}
		case s.want == nil && err != nil:
			t.Errorf("%s: %v", s.name, err)
		case s.want != nil && !errors.Is(err, s.want):
			t.Errorf("%s: got %v, want %v", s.name, err, s.want)
		}
	}
	v, tok, err := st.GetFenced(ctx, "res")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("d", string(v)); diff != "" || tok != high {
		t.Errorf("GetFenced = %q token %d, want \"d\" token %d", v, tok, high)
	}
	_, _, err = st.GetFenced(ctx, "never")
	if !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("GetFenced of a key never written: %v, want ErrNotFound", err)
	}
	big := make([]byte, etcd.MaxValueLen+1)
	if err := st.PutFenced(ctx, "res", big, high); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("PutFenced of %d bytes: %v, want ErrInvalid", len(big), err)
	}
}

func holder(i int) string { return string(rune('a'+i)) + "-holder" }

// TestFencedKeyDeletedByHand: a fenced key deleted outside picket (etcdctl
// del) forgets its highest token and accepts a lower one, as docs/design.md
// says; raising the token floor to the newest token (picket restore -etcd
// -token-floor) gives the fence back to every key, deleted or not.
func TestFencedKeyDeletedByHand(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	ctx := t.Context()
	var toks []token.Token
	for i := range 2 {
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: "lock", Holder: holder(i), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, g.Token)
		if err := st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatal(err)
		}
	}
	low, high := toks[0], toks[1]
	if err := st.PutFenced(ctx, "k", []byte("new"), high); err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Client(st).Delete(ctx, st.Prefix()+"/kv/k"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutFenced(ctx, "k", []byte("stale"), low); err != nil {
		t.Fatalf("after the key was deleted by hand, the stale token %d: %v (the danger the docs describe is gone?)", low, err)
	}
	if _, _, err := st.RaiseFloor(ctx, high); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []token.Token{low, high} {
		var stale *token.StaleError
		if err := st.PutFenced(ctx, "k", []byte("stale"), tok); !errors.As(err, &stale) || stale.Highest != high {
			t.Errorf("PutFenced(k, %d) after the floor %d: %v, want stale with highest %d", tok, high, err, high)
		}
	}
	g, err := st.Acquire(ctx, lease.AcquireRequest{Name: "lock", Holder: holder(3), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if g.Token <= high {
		t.Errorf("a grant after the floor %d got token %d", high, g.Token)
	}
	if err := st.PutFenced(ctx, "k", []byte("next"), g.Token); err != nil {
		t.Errorf("PutFenced with the new token %d: %v", g.Token, err)
	}
}

// TestKVQuotaRace: 16 writers put 16 new fenced keys at once under a quota
// of 5 keys: exactly 5 are written, the others refused with lease.ErrQuota,
// and the usage the store keeps says 5 (the quota is checked in the write's
// own transaction). The mutant quota-off must fail it.
func TestKVQuotaRace(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c, etcd.WithMaxKVKeys(5))
	ctx := t.Context()
	g, err := st.Acquire(ctx, lease.AcquireRequest{Name: "lock", Holder: holder(0), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() { errs <- st.PutFenced(ctx, fmt.Sprintf("k%d", i), []byte("v"), g.Token) }()
	}
	ok, over := 0, 0
	for range 16 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, lease.ErrQuota):
			over++
		default:
			t.Errorf("PutFenced: %v", err)
		}
	}
	resp, err := etcd.Client(st).Get(ctx, st.Prefix()+"/kv/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if ok != 5 || over != 11 || resp.Count != 5 {
		t.Errorf("%d written, %d refused, %d keys in the cluster; want 5, 11, 5", ok, over, resp.Count)
	}
}
