package httpapi_test

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// newQuotaEnv serves a store with the quota options q (and the fenced KV)
// on 127.0.0.1.
func newQuotaEnv(t *testing.T, q ...sqlite.Option) *env {
	t.Helper()
	st := mustOpenStore(t, nil, q...)
	return serve(t, nil, st, httpapi.WithKV(st))
}

// TestLeaseQuota: with -max-leases 3, the fourth live lease is refused with
// 507 quota_exceeded and nothing is written; a holder's re-acquire, a
// renew and a release still pass, and a release makes room. The control is
// the same sequence without a quota: the fourth is granted.
func TestLeaseQuota(t *testing.T) {
	acq := func(name, holder string) string {
		return fmt.Sprintf(`{"name":%q,"holder":%q,"ttl_ms":60000}`, name, holder)
	}
	for _, tc := range []struct {
		name  string
		quota []sqlite.Option
		want  int // status of the fourth acquire
	}{
		{"quota 3", []sqlite.Option{sqlite.WithMaxLeases(3)}, 507},
		{"control: no quota", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newQuotaEnv(t, tc.quota...)
			for i := range 3 {
				if a := e.post(t, "/v1/acquire", acq(fmt.Sprint("n", i), "h")); a.status != 200 {
					t.Fatalf("acquire %d: %d %s", i, a.status, a.body)
				}
			}
			a := e.post(t, "/v1/acquire", acq("n3", "h"))
			if a.status != tc.want {
				t.Fatalf("fourth acquire: %d %s, want %d", a.status, a.body, tc.want)
			}
			if tc.want != 507 {
				return
			}
			wantJSON(t, "fourth acquire", `{"error":"quota_exceeded"}`, a.body)
			if _, err := e.store.Get(t.Context(), "n3"); !errors.Is(err, lease.ErrNotFound) {
				t.Errorf("n3 after the refusal: %v, want not found", err)
			}
			// A re-acquire by the holder, a held answer, a renew: no new lease.
			for _, c := range []struct{ path, body string }{
				{"/v1/acquire", acq("n0", "h")},
				{"/v1/renew", `{"name":"n1","holder":"h","token":2}`},
			} {
				if a := e.post(t, c.path, c.body); a.status != 200 {
					t.Errorf("%s %s at the quota: %d %s", c.path, c.body, a.status, a.body)
				}
			}
			if a := e.post(t, "/v1/acquire", acq("n0", "other")); a.status != 409 {
				t.Errorf("acquire of a held name at the quota: %d %s, want 409 held", a.status, a.body)
			}
			if a := e.post(t, "/v1/release", `{"name":"n2","holder":"h","token":3}`); a.status != 200 {
				t.Fatalf("release: %d %s", a.status, a.body)
			}
			if a := e.post(t, "/v1/acquire", acq("n3", "h")); a.status != 200 {
				t.Errorf("acquire after a release made room: %d %s", a.status, a.body)
			}
			// The Client reads it as lease.ErrQuota.
			_, err := e.client(t).Acquire(t.Context(), lease.AcquireRequest{Name: "n4", Holder: "h", TTL: time.Minute})
			if !errors.Is(err, lease.ErrQuota) {
				t.Errorf("Client.Acquire over the quota: %v, want lease.ErrQuota", err)
			}
		})
	}
}

// TestLeaseQuotaRace: 40 clients acquire 40 names at once against a quota of
// 5: exactly 5 are granted, since the check runs inside the write
// transaction.
func TestLeaseQuotaRace(t *testing.T) {
	e := newQuotaEnv(t, sqlite.WithMaxLeases(5))
	c := e.client(t)
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		granted, quotas int
	)
	for i := range 40 {
		wg.Go(func() {
			_, err := c.Acquire(t.Context(), lease.AcquireRequest{Name: fmt.Sprint("race/", i), Holder: "h", TTL: time.Minute})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case errors.Is(err, lease.ErrQuota):
				quotas++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	page, err := e.store.List(t.Context(), lease.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if granted != 5 || quotas != 35 || len(page.Leases) != 5 {
		t.Errorf("%d granted, %d over the quota, %d leases in the store; want 5, 35, 5", granted, quotas, len(page.Leases))
	}
}

// TestKVQuota: -max-kv-keys and -max-kv-bytes refuse a fenced write that
// would go over them with 507, writing nothing; a write that does not grow
// the store passes. Without a quota (the control) the same writes pass.
func TestKVQuota(t *testing.T) {
	put := func(e *env, key, value string) answer {
		return e.do(t, http.MethodPut, "/v1/kv/"+key, value, http.Header{"Fencing-Token": {"1"}})
	}
	t.Run("keys", func(t *testing.T) {
		e := newQuotaEnv(t, sqlite.WithMaxKVKeys(2))
		mint(t, e, 1)
		for _, k := range []string{"k1", "k2"} {
			if a := put(e, k, "v"); a.status != 200 {
				t.Fatalf("put %s: %d %s", k, a.status, a.body)
			}
		}
		a := put(e, "k3", "v")
		if a.status != 507 {
			t.Fatalf("third key: %d %s, want 507", a.status, a.body)
		}
		wantJSON(t, "third key", `{"error":"quota_exceeded"}`, a.body)
		if a := e.do(t, http.MethodGet, "/v1/kv/k3", "", nil); a.status != 404 {
			t.Errorf("k3 after the refusal: %d %s", a.status, a.body)
		}
		if a := put(e, "k1", "a longer value"); a.status != 200 {
			t.Errorf("overwrite at the quota: %d %s", a.status, a.body)
		}
		// A deleted key keeps its fence, so it still counts.
		if a := e.do(t, http.MethodDelete, "/v1/kv/k2", "", http.Header{"Fencing-Token": {"1"}}); a.status != 200 {
			t.Fatalf("delete: %d %s", a.status, a.body)
		}
		if a := put(e, "k3", "v"); a.status != 507 {
			t.Errorf("a new key after a delete: %d %s, want 507", a.status, a.body)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		e := newQuotaEnv(t, sqlite.WithMaxKVBytes(100))
		mint(t, e, 1)
		if a := put(e, "k", strings.Repeat("v", 90)); a.status != 200 { // 1 + 90 bytes
			t.Fatalf("put: %d %s", a.status, a.body)
		}
		if a := put(e, "j", strings.Repeat("v", 9)); a.status != 507 { // 1 + 9 more: 101
			t.Errorf("put over the byte quota: %d %s, want 507", a.status, a.body)
		}
		if a := put(e, "k", strings.Repeat("v", 99)); a.status != 200 { // exactly 100
			t.Errorf("growing k to the quota: %d %s", a.status, a.body)
		}
		if a := put(e, "k", strings.Repeat("v", 100)); a.status != 507 {
			t.Errorf("growing k past the quota: %d %s, want 507", a.status, a.body)
		}
		v, _, err := e.store.GetFenced(t.Context(), "k")
		if err != nil || len(v) != 99 {
			t.Errorf("k after the refusal: %d bytes, %v; want the 99 written before", len(v), err)
		}
		if a := e.do(t, http.MethodDelete, "/v1/kv/k", "", http.Header{"Fencing-Token": {"1"}}); a.status != 200 {
			t.Fatalf("delete: %d %s", a.status, a.body)
		}
		if a := put(e, "j", strings.Repeat("v", 90)); a.status != 200 {
			t.Errorf("put after a delete freed the bytes: %d %s", a.status, a.body)
		}
	})
	t.Run("control: no quota", func(t *testing.T) {
		e := newQuotaEnv(t)
		mint(t, e, 1)
		for i := range 5 {
			if a := put(e, fmt.Sprint("k", i), strings.Repeat("v", 1000)); a.status != 200 {
				t.Fatalf("put %d: %d %s", i, a.status, a.body)
			}
		}
	})
}

// TestKVDelete: DELETE /v1/kv/{key} with a token not lower than the key's
// highest removes the value and keeps the token, so the late write of a
// stale holder stays stale after the delete; a lower token is 409; a token
// the store never issued is a 400 and locks nothing. The control is a
// delete that forgot the fence (the row removed outright): the stale write
// then gets through.
func TestKVDelete(t *testing.T) {
	e := newEnv(t)
	mint(t, e, 3)
	tok := func(v string) http.Header { return http.Header{"Fencing-Token": {v}} }
	steps := []struct {
		method, token, body string
		status              int
		want                string
	}{
		{"PUT", "2", "from B", 200, `{"key":"report","token":2}`},
		{"DELETE", "1", "", 409, `{"error":"stale_token","highest":2}`},
		{"DELETE", "2", "", 200, `{"key":"report","token":2,"deleted":true}`},
		{"GET", "", "", 404, `{"error":"not_found"}`},
		{"PUT", "1", "from A, late", 409, `{"error":"stale_token","highest":2}`},
		{"DELETE", "2", "", 200, `{"key":"report","token":2,"deleted":true}`}, // again: still done
		{"PUT", "9007199254740991", "forged", 400, `{"error":"bad_request"}`},
		{"DELETE", "4", "", 400, `{"error":"bad_request"}`},
		{"PUT", "3", "from C", 200, `{"key":"report","token":3}`},
	}
	for _, s := range steps {
		var h http.Header
		if s.token != "" {
			h = tok(s.token)
		}
		a := e.do(t, s.method, "/v1/kv/report", s.body, h)
		what := s.method + " with " + s.token
		if a.status != s.status {
			t.Fatalf("%s: %d %s, want %d", what, a.status, a.body, s.status)
		}
		wantJSON(t, what, s.want, a.body)
		if s.status == 400 && !strings.Contains(string(a.body), "was never issued") {
			t.Errorf("%s: %s does not say the token was never issued", what, a.body)
		}
	}
	v, got, err := e.store.GetFenced(t.Context(), "report")
	if err != nil || string(v) != "from C" || got != 3 {
		t.Errorf("at the end: %q, %d, %v; want \"from C\", 3", v, got, err)
	}
	// A delete of a key never written records its token all the same.
	c := e.client(t)
	if err := c.DeleteFenced(t.Context(), "never", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.PutFenced(t.Context(), "never", []byte("late"), 2); !errors.Is(err, token.ErrStale) {
		t.Errorf("put below a delete's token: %v, want token.ErrStale", err)
	}
	if _, _, err := c.GetFenced(t.Context(), "never"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("get of a deleted key: %v, want lease.ErrNotFound", err)
	}

	t.Run("control: a delete without the fence", func(t *testing.T) {
		e := newEnv(t)
		mint(t, e, 2)
		if a := e.do(t, "PUT", "/v1/kv/report", "from B", tok("2")); a.status != 200 {
			t.Fatal(a.status)
		}
		// What a naive delete does: drop the row, and the fence with it.
		db, err := sql.Open("sqlite", "file:"+e.store.Path()+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("DELETE FROM kv WHERE key = 'report'"); err != nil {
			t.Fatal(err)
		}
		if a := e.do(t, "PUT", "/v1/kv/report", "from A, late", tok("1")); a.status != 200 {
			t.Fatalf("the stale write after a naive delete: %d, want 200 (the loss the fence prevents)", a.status)
		}
	})
}
