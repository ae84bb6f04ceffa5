package sqlite_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
)

// TestFailedSyncHealthz: the same failed fsync seen through the HTTP API:
// the acquire during it answers 503 "unavailable" without a token, with
// "reason": "unknown" (its COMMIT ran: it may be on disk), and from then on
// /healthz answers 503 and acquires are refused (no "unknown").
func TestFailedSyncHealthz(t *testing.T) {
	ffs := faultfs.StartT(t)
	s := mustOpenPath(t, filepath.Join(ffs.Dir(), "picket.db"))
	h, err := httpapi.NewServer(s)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		code, b := httpCall(t, method, srv.URL+path, body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, code, b, err)
		}
		return code, m
	}
	if code, m := call("POST", "/v1/acquire", `{"name": "a", "ttl_ms": 60000}`); code != 200 || m["token"] != 1.0 {
		t.Fatalf("acquire before: %d %v", code, m)
	}
	if code, m := call("GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz before: %d %v", code, m)
	}
	ffs.FailSync(syscall.EIO)
	for _, c := range []struct {
		method, path, body string
		unknown            bool
	}{
		{"POST", "/v1/acquire", `{"name": "b", "ttl_ms": 60000}`, true}, // its commit fails
		{"GET", "/healthz", "", false},
		{"POST", "/v1/acquire", `{"name": "c", "ttl_ms": 60000}`, false}, // refused
	} {
		code, m := call(c.method, c.path, c.body)
		if code != http.StatusServiceUnavailable || m["error"] != "unavailable" || m["token"] != nil {
			t.Errorf("%s %s with fsync failing: %d %v; want 503 unavailable, no token", c.method, c.path, code, m)
		}
		if unknown := m["reason"] == httpapi.ReasonUnknown; unknown != c.unknown {
			t.Errorf("%s %s with fsync failing: %v; reason %q: want \"unknown\" only for the acquire whose commit failed", c.method, c.path, m, httpapi.ReasonUnknown)
		}
	}
	var failed *sqlite.FailedError
	if err := s.Health(ctxT(t)); err == nil || !errors.As(err, &failed) {
		t.Errorf("Health: %v; want a *FailedError", err)
	}
}
