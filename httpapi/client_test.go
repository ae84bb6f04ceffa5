package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/sqlitetest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// TestConformance: a Client on a server on 127.0.0.1 over a sqlite file is
// a lease.Store like any other.
func TestConformance(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		Open: func(t testing.TB, cfg leasetest.Config) lease.Store {
			st := mustOpenStore(t, cfg.Clock, sqlite.WithLockDelay(cfg.LockDelay))
			e := serve(t, cfg.Clock, st, httpapi.WithKV(st), httpapi.WithAdminToken("admin-token"))
			return e.client(t, httpapi.WithAdminToken("admin-token"))
		},
		LoseAnswer: loseAnswer,
	})
}

// TestErrorsAcrossTheWire: errors.Is and errors.As hold on the Client's
// errors as they do on the store's.
func TestErrorsAcrossTheWire(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	ctx := t.Context()
	mint(t, e, 9) // the fenced KV below uses tokens up to 5, which must have been issued
	g, err := c.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h1", Owner: "o1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("held", func(t *testing.T) {
		_, err := c.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h2", TTL: time.Second})
		if !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("got %v, want lease.ErrHeld", err)
		}
		var held *lease.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("%v is not a *lease.HeldError", err)
		}
		want := &lease.HeldError{Name: "a", Owner: "o1", Expires: g.Expires}
		if diff := cmp.Diff(want, held); diff != "" {
			t.Errorf("HeldError mismatch (-want +got):\n%s", diff)
		}
		var apiErr *httpapi.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != httpapi.CodeHeld {
			t.Errorf("%v: want an *httpapi.Error with 409 held", err)
		}
	})
	t.Run("lost", func(t *testing.T) {
		_, err := c.Renew(ctx, lease.RenewRequest{Name: "a", Holder: "h2", Token: g.Token})
		if !errors.Is(err, lease.ErrLost) {
			t.Errorf("renew by another: got %v, want lease.ErrLost", err)
		}
		if err := c.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h1", Token: g.Token + 1}); !errors.Is(err, lease.ErrLost) {
			t.Errorf("release with another token: got %v, want lease.ErrLost", err)
		}
	})
	t.Run("stale", func(t *testing.T) {
		if err := c.PutFenced(ctx, "k", []byte("v"), 5); err != nil {
			t.Fatal(err)
		}
		err := c.PutFenced(ctx, "k", []byte("old"), 4)
		if !errors.Is(err, token.ErrStale) {
			t.Fatalf("got %v, want token.ErrStale", err)
		}
		var stale *token.StaleError
		if !errors.As(err, &stale) {
			t.Fatalf("%v is not a *token.StaleError", err)
		}
		if diff := cmp.Diff(&token.StaleError{Resource: "k", Token: 4, Highest: 5}, stale); diff != "" {
			t.Errorf("StaleError mismatch (-want +got):\n%s", diff)
		}
		if errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrHeld) {
			t.Errorf("%v matches more than token.ErrStale", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		if _, err := c.Get(ctx, "nobody"); !errors.Is(err, lease.ErrNotFound) {
			t.Errorf("Get: got %v, want lease.ErrNotFound", err)
		}
		if _, _, err := c.GetFenced(ctx, "nothing"); !errors.Is(err, lease.ErrNotFound) {
			t.Errorf("GetFenced: got %v, want lease.ErrNotFound", err)
		}
	})
	t.Run("invalid, caught by the client", func(t *testing.T) {
		if _, err := c.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Millisecond}); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("got %v, want lease.ErrInvalid", err)
		}
		if err := c.PutFenced(ctx, "k", nil, 0); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("token 0: got %v, want lease.ErrInvalid", err)
		}
	})
	t.Run("invalid, caught by the server", func(t *testing.T) {
		// A client that does not check: the server refuses all the same.
		a := e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1}`)
		if a.status != 400 {
			t.Fatalf("status %d", a.status)
		}
		raw := rawClient(t, e)
		_, err := raw.Acquire(ctx, lease.AcquireRequest{Name: "x", Holder: "h", TTL: time.Second})
		if !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("got %v, want lease.ErrInvalid", err)
		}
	})
	t.Run("values round trip", func(t *testing.T) {
		for _, key := range []string{"plain", "a/b", "a//b", ".", "..", "sp ace?#%"} {
			value := []byte("value of " + key)
			if err := c.PutFenced(ctx, key, value, 3); err != nil {
				t.Fatalf("PutFenced(%q): %v", key, err)
			}
			got, tok, err := c.GetFenced(ctx, key)
			if err != nil || string(got) != string(value) || tok != 3 {
				t.Errorf("GetFenced(%q) = %q, %d, %v; want %q, 3", key, got, tok, err, value)
			}
		}
	})
	t.Run("names that need escaping", func(t *testing.T) {
		for _, name := range []string{"a//b", ".", "..", "x/./y", "trailing/", "q?x=1", "hash#x", "per%cent", "ünï"} {
			g, err := c.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Second})
			if err != nil {
				t.Fatalf("Acquire(%q): %v", name, err)
			}
			info, err := c.Get(ctx, name)
			if err != nil || info.Name != name || info.Token != g.Token {
				t.Errorf("Get(%q) = %+v, %v; want token %d", name, info, err, g.Token)
			}
		}
	})
}

// rawClient returns a Client whose JSON bodies are rewritten on the way, a
// name "x" becoming "x\u0001": it gets past the client's own checks and
// proves the server checks for itself.
func rawClient(t *testing.T, e *env) *httpapi.Client {
	t.Helper()
	hc := &http.Client{Transport: rewrite{base: e.ts.Client().Transport, from: `"x"`, to: `"x\u0001"`}}
	c, err := httpapi.NewClient(e.ts.URL, httpapi.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type rewrite struct {
	base     http.RoundTripper
	from, to string
}

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		b = bytes.ReplaceAll(b, []byte(r.from), []byte(r.to))
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
	}
	return r.base.RoundTrip(req)
}

// TestUnauthorizedAcrossTheWire: a Client without the token gets
// ErrUnauthorized; with it, everything works.
func TestUnauthorizedAcrossTheWire(t *testing.T) {
	e := newEnv(t, httpapi.WithAuthToken("tok"))
	_, err := e.client(t).List(t.Context(), lease.ListRequest{})
	if !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Errorf("without the token: got %v, want httpapi.ErrUnauthorized", err)
	}
	if _, err := e.client(t, httpapi.WithAuthToken("tok")).List(t.Context(), lease.ListRequest{}); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

// TestClientUnavailable: a server that cannot be reached, or whose store is
// closed, is lease.ErrUnavailable; a context that ends is the context's
// error.
func TestClientUnavailable(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	if err := c.Health(t.Context()); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Health(t.Context()); !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("Health on a closed store: got %v, want lease.ErrUnavailable", err)
	}
	if _, err := c.Acquire(t.Context(), lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Second}); !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("Acquire on a closed store: got %v, want lease.ErrUnavailable", err)
	}
	e.ts.Close()
	if _, err := c.Get(t.Context(), "a"); !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("Get from a closed server: got %v, want lease.ErrUnavailable", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Get(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: got %v, want context.Canceled", err)
	}
}

// TestUnknownErrorCode: an answer the table does not know is an *Error with
// its status, matching no sentinel.
func TestUnknownErrorCode(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"unknown code", `{"error":"teapot","message":"short and stout"}`, 418},
		{"not JSON", `<html>bad gateway</html>`, 502},
		{"empty", ``, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c, err := httpapi.NewClient(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(t.Context(), "a")
			var apiErr *httpapi.Error
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status {
				t.Fatalf("got %v, want an *httpapi.Error with status %d", err, tc.status)
			}
			for _, s := range []error{lease.ErrHeld, lease.ErrLost, lease.ErrNotFound, lease.ErrInvalid, lease.ErrUnavailable, token.ErrStale} {
				if errors.Is(err, s) {
					t.Errorf("%v matches %v", err, s)
				}
			}
			if !strings.Contains(err.Error(), http.StatusText(tc.status)) && tc.body == "" {
				t.Errorf("error %q does not say %q", err, http.StatusText(tc.status))
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:7070", "ftp://host", "http://", "http://host/?q=1", "://x"} {
		if _, err := httpapi.NewClient(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("NewClient(%q): got %v, want lease.ErrInvalid", bad, err)
		}
	}
	// A path prefix (a server behind a proxy) is kept.
	var got string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"error":"not_found","message":"no"}`))
	}))
	defer ts.Close()
	c, err := httpapi.NewClient(ts.URL + "/picket/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), "a/b"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get: %v", err)
	}
	if want := "/picket/v1/leases/a%2Fb"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
}

// loseAnswer is the conformance suite's Harness.LoseAnswer for the Client: a
// server over a SQLite file, and a lose that holds the file's write lock
// from another connection while the request is sent, so that the server's
// store waits in its batch while the Client's context ends; then the lock
// is let go and the batch commits. The Client only knows its request left.
func loseAnswer(t *testing.T) (lease.Store, func(write func(ctx context.Context) error) error) {
	st := mustOpenStore(t, nil)
	e := serve(t, nil, st, httpapi.WithKV(st))
	return e.client(t), func(write func(ctx context.Context) error) error {
		unlock := sqlitetest.HoldWriteLock(t, st.Path())
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := write(ctx)
		cancel()
		unlock()
		return err
	}
}
