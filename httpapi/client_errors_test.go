package httpapi_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// A call about no lease (health) names only the operation in its error; a
// call about a lease names the lease. `picket health` against a stopped
// server printed `health "": …` before.
func TestClientErrorNamesItsSubject(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every call is refused
	c, err := httpapi.NewClient("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	err = c.Health(ctx)
	if !errors.Is(err, lease.ErrUnavailable) {
		t.Fatalf("Health against a closed port: %v, want ErrUnavailable", err)
	}
	if want := "httpapi: health: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Health error %q, want it to start with %q", err, want)
	}

	_, err = c.Get(ctx, "jobs/nightly")
	if want := `httpapi: get "jobs/nightly": `; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Get error %v, want it to start with %q", err, want)
	}
}
