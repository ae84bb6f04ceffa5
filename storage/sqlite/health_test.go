package sqlite_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestHealthzTruthful: /healthz on a real server says 503, with the reason,
// whenever the store cannot grant, and picket_store_healthy says 0: on a
// full file (PRAGMA max_page_count, as a full disk) and on a read-only one
// (PRAGMA query_only); once a write commits again both say healthy. The
// control is the check /healthz made before, a read: it keeps answering
// while every grant fails, which is how a full disk went unseen.
func TestHealthzTruthful(t *testing.T) {
	s := mustOpen(t)
	h, err := httpapi.NewServer(s, httpapi.WithKV(s))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		code, b := httpCall(t, method, srv.URL+path, body)
		return code, string(b)
	}
	owner := strings.Repeat("o", lease.MaxOwnerLen)
	acquireN := 0
	grant := func() (int, string) {
		acquireN++
		return call("POST", "/v1/acquire", fmt.Sprintf(`{"name":"n/%d","ttl_ms":3600000,"owner":%q}`, acquireN, owner))
	}
	healthy := func(want bool, reason string) {
		t.Helper()
		code, body := call("GET", "/healthz", "")
		if (code == 200) != want {
			t.Errorf("healthz: %d %s, want healthy %v", code, body, want)
		}
		if !want {
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || m["error"] != "unavailable" ||
				!strings.Contains(fmt.Sprint(m["message"]), reason) {
				t.Errorf("healthz: %s; want unavailable saying %q", body, reason)
			}
		}
		_, metrics := call("GET", "/metrics", "")
		gauge := "picket_store_healthy 0"
		if want {
			gauge = "picket_store_healthy 1"
		}
		if !strings.Contains(metrics, gauge+"\n") {
			t.Errorf("metrics lack %q", gauge)
		}
	}
	if code, body := grant(); code != 200 {
		t.Fatalf("acquire: %d %s", code, body)
	}
	healthy(true, "")

	t.Run("full", func(t *testing.T) {
		pages, err := sqlite.QueryWriter(s, "PRAGMA page_count")
		if err != nil {
			t.Fatal(err)
		}
		if err := sqlite.ExecWriter(s, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
			t.Fatal(err)
		}
		code := 200
		for i := 0; i < 2000 && code == 200; i++ {
			code, _ = grant()
		}
		if code != 503 {
			t.Fatalf("no grant failed on a full file (last status %d)", code)
		}
		healthy(false, "disk full")
		// The control: a read still answers.
		if code, body := call("GET", "/v1/leases/n%2F1", ""); code != 200 {
			t.Errorf("control: a read on the full file: %d %s; a read-based health check would have failed too", code, body)
		}
		if err := sqlite.ExecWriter(s, "PRAGMA max_page_count = 4294967294"); err != nil {
			t.Fatal(err)
		}
		if code, body := grant(); code != 200 {
			t.Fatalf("acquire once space returned: %d %s", code, body)
		}
		healthy(true, "")
	})
	t.Run("read-only", func(t *testing.T) {
		if err := sqlite.ExecWriter(s, "PRAGMA query_only = 1"); err != nil {
			t.Fatal(err)
		}
		if code, body := grant(); code != 503 {
			t.Fatalf("acquire on a read-only file: %d %s, want 503", code, body)
		}
		healthy(false, "read-only")
		if err := sqlite.ExecWriter(s, "PRAGMA query_only = 0"); err != nil {
			t.Fatal(err)
		}
		if code, body := grant(); code != 200 {
			t.Fatalf("acquire once writable: %d %s", code, body)
		}
		healthy(true, "")
	})
}
