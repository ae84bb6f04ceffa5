package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestNamesOverHTTP: names and keys that would collide with another or look
// like another are refused with 400 wherever they come in (a JSON string, a
// path), and nothing is granted or written; a valid surrogate pair (an emoji)
// is a name like any other.
func TestNamesOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, json string // the name as a JSON string literal
		status     int
	}{
		{"lone high surrogate", `"\ud800"`, 400},
		{"lone low surrogate", `"\udc00"`, 400},
		{"high surrogate then a letter", `"a\uD800b"`, 400},
		{"two high surrogates", `"\ud800\ud800"`, 400},
		{"reversed pair", `"\udc00\ud800"`, 400},
		{"high surrogate at the end", `"jobs/\udbff"`, 400},
		{"zero-width space, escaped", `"a\u200bb"`, 400},
		{"zero-width space, raw", "\"a\u200bb\"", 400},
		{"zero-width joiner", `"a\u200db"`, 400},
		{"bidi override", `"\u202etxt.exe"`, 400},
		{"bidi isolate", `"a\u2066b"`, 400},
		{"byte order mark", `"\ufeffa"`, 400},
		{"control: a surrogate pair", `"\ud83d\ude00"`, 200},
		{"control: an escaped backslash before u", `"a\\ud800"`, 200},
		{"control: U+FFFD itself", `"\ufffd"`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a := e.post(t, "/v1/acquire", `{"name":`+tc.json+`,"ttl_ms":60000}`)
			if a.status != tc.status {
				t.Fatalf("acquire %s: %d %s, want %d", tc.json, a.status, a.body, tc.status)
			}
			page, err := e.store.List(t.Context(), lease.ListRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if (len(page.Leases) == 1) != (tc.status == 200) {
				t.Errorf("leases after it: %+v", page.Leases)
			}
		})
	}
	t.Run("holder with a lone surrogate", func(t *testing.T) {
		e := newEnv(t)
		a := e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":60000,"holder":"h\udfff"}`)
		if a.status != 400 {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("paths", func(t *testing.T) {
		e := newEnv(t)
		mint(t, e, 1)
		for _, p := range []string{"/v1/leases/a%E2%80%8Bb", "/v1/leases/%E2%80%AEa", "/v1/kv/a%E2%80%8Bb", "/v1/leases/%ED%A0%80"} {
			if a := e.do(t, http.MethodGet, p, "", nil); a.status != 400 {
				t.Errorf("GET %s: %d %s, want 400", p, a.status, a.body)
			}
		}
		if a := e.do(t, http.MethodPut, "/v1/kv/a%E2%80%8Bb", "v", http.Header{"Fencing-Token": {"1"}}); a.status != 400 {
			t.Errorf("PUT a zero-width key: %d %s, want 400", a.status, a.body)
		}
	})
}

// TestLoneSurrogateControl is the control of the surrogate check: decoded
// by encoding/json alone, "\ud800" and "\ufffd" are the same name, so
// without the check two different names would name one lease.
func TestLoneSurrogateControl(t *testing.T) {
	var a, b string
	if err := json.Unmarshal([]byte(`"\ud800"`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`"\ufffd"`), &b); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("encoding/json kept %q and %q apart: the check guards against nothing", a, b)
	}
}

// TestLockDelayMS: acquire takes "lock_delay_ms" (0 to 60000, whole ms) and
// hands it to the store; the Client sends it; out of bounds is a 400.
func TestLockDelayMS(t *testing.T) {
	for _, tc := range []struct {
		body string
		want time.Duration
		ok   bool
	}{
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":1500}`, 1500 * time.Millisecond, true},
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":0}`, 0, true},
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":60000}`, time.Minute, true},
		{`{"name":"a","ttl_ms":1000}`, 0, true},
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":60001}`, 0, false},
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":-1}`, 0, false},
		{`{"name":"a","ttl_ms":1000,"lock_delay_ms":1.5}`, 0, false},
	} {
		req, err := httpapi.DecodeAcquire(bytes.NewReader([]byte(tc.body)))
		if (err == nil) != tc.ok || req.LockDelay != tc.want {
			t.Errorf("%s: %v, %v; want %v, ok %v", tc.body, req.LockDelay, err, tc.want, tc.ok)
		}
	}
	// The Client sends it and the server passes it to the store.
	rec := &recordingStore{Store: mustOpenStore(t, nil)}
	ts := httptest.NewServer(newServer(t, rec))
	defer ts.Close()
	c, err := httpapi.NewClient(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(t.Context(), lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Second, LockDelay: 2500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{2500 * time.Millisecond}, rec.lockDelays); diff != "" {
		t.Errorf("lock delays the store saw (-want +got):\n%s", diff)
	}
}

// recordingStore records the lock delay of each acquire.
type recordingStore struct {
	lease.Store
	lockDelays []time.Duration
}

func (r *recordingStore) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	r.lockDelays = append(r.lockDelays, req.LockDelay)
	return r.Store.Acquire(ctx, req)
}
