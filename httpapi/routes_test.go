package httpapi_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The fake clock's wall reads 2026-01-01T00:00:00Z: a 10 s lease granted at
// once expires at the10s.
const the10s = "2026-01-01T00:00:10Z"

func TestAcquire(t *testing.T) {
	runRoutes(t, []routeCase{
		{
			name:   "free name",
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"jobs/nightly","ttl_ms":10000,"owner":"host/1","holder":"h1"}`,
			status: 200,
			want:   `{"name":"jobs/nightly","holder":"h1","owner":"host/1","token":1,"ttl_ms":10000,"expires_at":"` + the10s + `"}`,
		},
		{
			name:   "owner optional",
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"a","ttl_ms":10000,"holder":"h1"}`,
			status: 200,
			want:   `{"name":"a","holder":"h1","owner":"","token":1,"ttl_ms":10000,"expires_at":"` + the10s + `"}`,
		},
		{
			name: "same holder gets the same grant, extended",
			setup: func(t *testing.T, e *env) {
				e.acquire(t, "a", "h1", "o1", 5*time.Second)
				e.acquire(t, "other", "h9", "o9", 5*time.Second) // token 2
			},
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"a","ttl_ms":10000,"owner":"o1","holder":"h1"}`,
			status: 200,
			want:   `{"name":"a","holder":"h1","owner":"o1","token":1,"ttl_ms":10000,"expires_at":"` + the10s + `"}`,
		},
		{
			name:   "held by another",
			setup:  func(t *testing.T, e *env) { e.acquire(t, "a", "h1", "o1", 10*time.Second) },
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"a","ttl_ms":10000,"holder":"h2"}`,
			status: 409,
			want:   `{"error":"held","owner":"o1","expires_at":"` + the10s + `"}`,
		},
		{
			name:   "held, wait runs out",
			setup:  func(t *testing.T, e *env) { e.acquire(t, "a", "h1", "o1", 10*time.Second) },
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"a","ttl_ms":10000,"holder":"h2","wait_ms":30}`,
			status: 409,
			want:   `{"error":"held","owner":"o1","expires_at":"` + the10s + `"}`,
		},
		{
			name: "taken over after expiry with the next token",
			setup: func(t *testing.T, e *env) {
				e.acquire(t, "a", "h1", "o1", 10*time.Second)
				e.clk.Advance(11 * time.Second)
			},
			method: "POST", path: "/v1/acquire",
			body:   `{"name":"a","ttl_ms":10000,"holder":"h2","owner":"o2"}`,
			status: 200,
			want:   `{"name":"a","holder":"h2","owner":"o2","token":2,"ttl_ms":10000,"expires_at":"2026-01-01T00:00:21Z"}`,
		},
	})
}

// TestAcquireChoosesHolder: without a holder the server chooses 128 random
// bits in hex, a new one each time.
func TestAcquireChoosesHolder(t *testing.T) {
	e := newEnv(t)
	hex := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for _, name := range []string{"a", "b", "c"} {
		a := e.post(t, "/v1/acquire", `{"name":"`+name+`","ttl_ms":10000}`)
		if a.status != 200 {
			t.Fatalf("acquire %q: %d %s", name, a.status, a.body)
		}
		var g grantBody
		if err := json.Unmarshal(a.body, &g); err != nil {
			t.Fatal(err)
		}
		if !hex.MatchString(g.Holder) {
			t.Errorf("holder %q is not 32 hex digits", g.Holder)
		}
		if seen[g.Holder] {
			t.Errorf("holder %q chosen twice", g.Holder)
		}
		seen[g.Holder] = true
		// The chosen holder is the one that renews.
		r := e.post(t, "/v1/renew", fmt.Sprintf(`{"name":%q,"holder":%q,"token":%d}`, name, g.Holder, g.Token))
		if r.status != 200 {
			t.Errorf("renew with the chosen holder: %d %s", r.status, r.body)
		}
	}
}

func TestRenew(t *testing.T) {
	held := func(t *testing.T, e *env) { e.acquire(t, "a", "h1", "o1", 10*time.Second) }
	runRoutes(t, []routeCase{
		{
			name: "extends with the same token",
			setup: func(t *testing.T, e *env) {
				held(t, e)
				e.clk.Advance(5 * time.Second)
			},
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h1","token":1,"ttl_ms":20000}`,
			status: 200,
			want:   `{"name":"a","holder":"h1","owner":"o1","token":1,"ttl_ms":20000,"expires_at":"2026-01-01T00:00:25Z"}`,
		},
		{
			name: "without ttl_ms keeps the TTL",
			setup: func(t *testing.T, e *env) {
				held(t, e)
				e.clk.Advance(5 * time.Second)
			},
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h1","token":1}`,
			status: 200,
			want:   `{"name":"a","holder":"h1","owner":"o1","token":1,"ttl_ms":10000,"expires_at":"2026-01-01T00:00:15Z"}`,
		},
		{
			name: "wrong holder is lost", setup: held,
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h2","token":1}`,
			status: 409, want: `{"error":"lost"}`,
		},
		{
			name: "wrong token is lost", setup: held,
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h1","token":2}`,
			status: 409, want: `{"error":"lost"}`,
		},
		{
			name: "expired is lost",
			setup: func(t *testing.T, e *env) {
				held(t, e)
				e.clk.Advance(11 * time.Second)
			},
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h1","token":1}`,
			status: 409, want: `{"error":"lost"}`,
		},
		{
			name:   "never held is lost",
			method: "POST", path: "/v1/renew",
			body:   `{"name":"a","holder":"h1","token":1}`,
			status: 409, want: `{"error":"lost"}`,
		},
	})
}

func TestRelease(t *testing.T) {
	held := func(t *testing.T, e *env) { e.acquire(t, "a", "h1", "o1", 10*time.Second) }
	runRoutes(t, []routeCase{
		{
			name: "frees the name", setup: held,
			method: "POST", path: "/v1/release",
			body:   `{"name":"a","holder":"h1","token":1}`,
			status: 200, want: `{"released":true}`,
		},
		{
			name: "twice is lost",
			setup: func(t *testing.T, e *env) {
				held(t, e)
				if a := e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`); a.status != 200 {
					t.Fatalf("first release: %d %s", a.status, a.body)
				}
			},
			method: "POST", path: "/v1/release",
			body:   `{"name":"a","holder":"h1","token":1}`,
			status: 409, want: `{"error":"lost"}`,
		},
		{
			name: "another holder's is lost", setup: held,
			method: "POST", path: "/v1/release",
			body:   `{"name":"a","holder":"h2","token":1}`,
			status: 409, want: `{"error":"lost"}`,
		},
	})

	// After a release the name is free at once, with the next token.
	e := newEnv(t)
	held(t, e)
	if a := e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`); a.status != 200 {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	if g := e.acquire(t, "a", "h2", "o2", 10*time.Second); g.Token != 2 {
		t.Errorf("acquire after release: token %d, want 2", g.Token)
	}
}

func TestGetAndList(t *testing.T) {
	three := func(t *testing.T, e *env) {
		e.acquire(t, "jobs/b", "h1", "o1", 10*time.Second)
		e.acquire(t, "jobs/a", "h2", "o2", 10*time.Second)
		e.acquire(t, "other", "h3", "o3", 10*time.Second)
	}
	info := func(name, owner string, tok int) string {
		b, _ := json.Marshal(map[string]any{"name": name, "owner": owner, "token": tok, "ttl_ms": 10000, "expires_at": the10s})
		return string(b)
	}
	runRoutes(t, []routeCase{
		{
			name: "get a live lease, without its holder", setup: three,
			method: "GET", path: "/v1/leases/jobs/a",
			status: 200, want: info("jobs/a", "o2", 2),
		},
		{
			name: "get with an escaped slash", setup: three,
			method: "GET", path: "/v1/leases/jobs%2Fb",
			status: 200, want: info("jobs/b", "o1", 1),
		},
		{
			name:   "get a free name",
			method: "GET", path: "/v1/leases/nobody",
			status: 404, want: `{"error":"not_found"}`,
		},
		{
			name: "get an expired lease",
			setup: func(t *testing.T, e *env) {
				three(t, e)
				e.clk.Advance(11 * time.Second)
			},
			method: "GET", path: "/v1/leases/other",
			status: 404, want: `{"error":"not_found"}`,
		},
		{
			name: "list everything, sorted", setup: three,
			method: "GET", path: "/v1/leases",
			status: 200,
			want:   `{"leases":[` + info("jobs/a", "o2", 2) + "," + info("jobs/b", "o1", 1) + "," + info("other", "o3", 3) + `]}`,
		},
		{
			name: "list a prefix", setup: three,
			method: "GET", path: "/v1/leases?prefix=jobs%2F",
			status: 200,
			want:   `{"leases":[` + info("jobs/a", "o2", 2) + "," + info("jobs/b", "o1", 1) + `]}`,
		},
		{
			name:   "list nothing is an empty array",
			method: "GET", path: "/v1/leases?prefix=x",
			status: 200, want: `{"leases":[]}`,
		},
		{
			name: "list leaves expired leases out",
			setup: func(t *testing.T, e *env) {
				three(t, e)
				e.clk.Advance(11 * time.Second)
				e.acquire(t, "late", "h4", "o4", 10*time.Second)
			},
			method: "GET", path: "/v1/leases",
			status: 200,
			want:   `{"leases":[{"name":"late","owner":"o4","token":4,"ttl_ms":10000,"expires_at":"2026-01-01T00:00:21Z"}]}`,
		},
	})
}

// TestGrantShape pins the member names of a grant: the contract with other
// languages.
func TestGrantShape(t *testing.T) {
	e := newEnv(t)
	a := e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":10000,"holder":"h"}`)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	want := []string{"expires_at", "holder", "name", "owner", "token", "ttl_ms"}
	if diff := cmp.Diff(want, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("grant members (-want +got):\n%s", diff)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store: a grant carries the holder", a.header.Get("Cache-Control"))
	}
	if s := a.header.Get("Content-Type"); s != "application/json" {
		t.Errorf("Content-Type %q", s)
	}
}
