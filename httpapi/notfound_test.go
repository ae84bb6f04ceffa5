package httpapi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestNotFoundSaysWhat: a 404 for a route or a key says what was not found,
// never "lease: not found" (there is no lease in either), and is still
// not_found, matching lease.ErrNotFound on the client, and lease.ErrNoKey for
// a key as in process.
func TestNotFoundSaysWhat(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ path, want string }{
		{"/nope", "httpapi: no route GET /nope"},
		{"/v1/kv/missing", `get fenced "missing": no such key`},
	} {
		a := e.do(t, "GET", c.path, "", nil)
		var body struct{ Error, Message string }
		if err := json.Unmarshal(a.body, &body); err != nil {
			t.Fatalf("GET %s: %v: %s", c.path, err, a.body)
		}
		if a.status != 404 || body.Error != "not_found" || !strings.Contains(body.Message, c.want) || strings.Contains(body.Message, "lease") {
			t.Errorf("GET %s: %d %+v; want 404 not_found saying %q, without \"lease\"", c.path, a.status, body, c.want)
		}
	}
	c, err := httpapi.NewClient(e.url)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.GetFenced(t.Context(), "missing")
	if !errors.Is(err, lease.ErrNoKey) || !errors.Is(err, lease.ErrNotFound) || strings.Contains(err.Error(), "lease:") {
		t.Errorf("client GetFenced of a missing key: %v; want lease.ErrNoKey and lease.ErrNotFound, without \"lease:\"", err)
	}
	if _, _, err := e.store.GetFenced(t.Context(), "missing"); !errors.Is(err, lease.ErrNoKey) || !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("store GetFenced of a missing key: %v; want lease.ErrNoKey and lease.ErrNotFound", err)
	}
}
