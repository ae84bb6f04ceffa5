package httpapi_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestServerBadOptions: a nil store, a value out of range or a Client's
// option is lease.ErrInvalid from NewServer, which returns no Server.
func TestServerBadOptions(t *testing.T) {
	st := mustOpenStore(t, nil)
	for _, tc := range []struct {
		name  string
		store lease.Store
		opt   httpapi.Option
	}{
		{"nil store", nil, nil},
		{"a client's option", st, httpapi.WithHTTPClient(&http.Client{})},
		{"negative in flight", st, httpapi.WithMaxInFlight(-1)},
		{"negative waiting", st, httpapi.WithMaxWaiting(-1)},
		{"negative lists", st, httpapi.WithMaxLists(-1)},
		{"negative body timeout", st, httpapi.WithBodyTimeout(-time.Second)},
		{"negative body budget", st, httpapi.WithBodyBudget(-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := httpapi.NewServer(tc.store, tc.opt)
			if !errors.Is(err, lease.ErrInvalid) || srv != nil {
				t.Fatalf("NewServer = %v, %v; want nil, lease.ErrInvalid", srv, err)
			}
		})
	}
}

// TestClientBadOptions: a Server's option is lease.ErrInvalid from
// NewClient, which returns no Client.
func TestClientBadOptions(t *testing.T) {
	st := mustOpenStore(t, nil)
	for _, tc := range []struct {
		name string
		opt  httpapi.Option
	}{
		{"WithKV", httpapi.WithKV(st)},
		{"WithMetrics", httpapi.WithMetrics(nil)},
		{"WithMaxInFlight", httpapi.WithMaxInFlight(1)},
		{"WithMaxWaiting", httpapi.WithMaxWaiting(1)},
		{"WithMaxLists", httpapi.WithMaxLists(1)},
		{"WithBodyTimeout", httpapi.WithBodyTimeout(time.Second)},
		{"WithBodyBudget", httpapi.WithBodyBudget(1)},
		{"WithAllowedOrigins", httpapi.WithAllowedOrigins("https://a.example")},
		{"WithAllowedHosts", httpapi.WithAllowedHosts("a.example")},
		{"WithStatusPage", httpapi.WithStatusPage(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpapi.NewClient("http://127.0.0.1:1", tc.opt)
			if !errors.Is(err, lease.ErrInvalid) || c != nil {
				t.Fatalf("NewClient = %v, %v; want nil, lease.ErrInvalid", c, err)
			}
		})
	}
}

// TestSharedOptions: the options of both sides (auth token, logger) are
// taken by both constructors; a nil logger and a nil option mean none, a
// nil HTTP client and nil metrics the defaults. The client, given the
// server's token through the same option, is let in.
func TestSharedOptions(t *testing.T) {
	shared := []httpapi.Option{httpapi.WithAuthToken("tok"), httpapi.WithAdminToken("admin"), httpapi.WithLogger(nil), nil}
	e := newEnv(t, append(shared, httpapi.WithMetrics(nil))...)
	if e.srv.Metrics() == nil {
		t.Fatal("WithMetrics(nil): no metrics")
	}
	c := e.client(t, append(shared, httpapi.WithHTTPClient(nil))...)
	if _, err := c.Acquire(t.Context(), lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatalf("Acquire with the shared token: %v", err)
	}
	bare, err := httpapi.NewClient(e.url, httpapi.WithHTTPClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Acquire(t.Context(), lease.AcquireRequest{Name: "b", Holder: "h", TTL: time.Minute}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Errorf("Acquire without the token: %v, want ErrUnauthorized (the control)", err)
	}
}
