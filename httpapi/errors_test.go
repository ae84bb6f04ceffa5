package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// failing is a store and KV whose every call fails with err.
type failing struct{ err error }

func (f failing) Acquire(context.Context, lease.AcquireRequest) (lease.Grant, error) {
	return lease.Grant{}, f.err
}
func (f failing) Renew(context.Context, lease.RenewRequest) (lease.Grant, error) {
	return lease.Grant{}, f.err
}
func (f failing) Release(context.Context, lease.ReleaseRequest) error { return f.err }
func (f failing) Get(context.Context, string) (lease.Info, error)     { return lease.Info{}, f.err }
func (f failing) List(context.Context, lease.ListRequest) (lease.ListPage, error) {
	return lease.ListPage{}, f.err
}
func (f failing) PutFenced(context.Context, string, []byte, token.Token) error {
	return f.err
}
func (f failing) GetFenced(context.Context, string) ([]byte, token.Token, error) {
	return nil, 0, f.err
}
func (f failing) DeleteFenced(context.Context, string, token.Token) error { return f.err }

// TestErrorTable: each store error becomes its status and code on the wire
// and the same sentinel again in the Client, through every route.
func TestErrorTable(t *testing.T) {
	expires := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		want   error // what the Client's error matches; nil: only *httpapi.Error
	}{
		{"held", fmt.Errorf("wrapped: %w", &lease.HeldError{Name: "a", Owner: "o", Expires: expires}), 409, "held", lease.ErrHeld},
		{"lost", fmt.Errorf("sqlite: renew %q: %w", "a", lease.ErrLost), 409, "lost", lease.ErrLost},
		{"stale", &token.StaleError{Resource: "a", Token: 1, Highest: 2}, 409, "stale_token", token.ErrStale},
		{"not found", lease.ErrNotFound, 404, "not_found", lease.ErrNotFound},
		{"invalid", fmt.Errorf("x: %w", lease.ErrInvalid), 400, "bad_request", lease.ErrInvalid},
		{"token invalid", token.ErrZero, 400, "bad_request", lease.ErrInvalid},
		{"unavailable", fmt.Errorf("x: %w", lease.ErrUnavailable), 503, "unavailable", lease.ErrUnavailable},
		{"quota", fmt.Errorf("x: %w", lease.ErrQuota), 507, "quota_exceeded", lease.ErrQuota},
		{"context ended", context.Canceled, 503, "unavailable", lease.ErrUnavailable},
		{"unknown", storekit.Unknown(fmt.Errorf("x: %w", lease.ErrUnavailable)), 503, "unavailable", lease.ErrUnknown},
		{"anything else", errors.New("disk on fire"), 500, "internal", httpapi.ErrInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(newServer(t, failing{tc.err}, httpapi.WithKV(failing{tc.err})))
			defer ts.Close()
			c, err := httpapi.NewClient(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			calls := map[string]func() error{
				"acquire": func() error {
					_, err := c.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Second})
					return err
				},
				"renew": func() error {
					_, err := c.Renew(ctx, lease.RenewRequest{Name: "a", Holder: "h", Token: 1})
					return err
				},
				"release": func() error { return c.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h", Token: 1}) },
				"get": func() error {
					_, err := c.Get(ctx, "a")
					return err
				},
				"list": func() error {
					_, err := c.List(ctx, lease.ListRequest{})
					return err
				},
				"put":    func() error { return c.PutFenced(ctx, "a", []byte("v"), 1) },
				"delete": func() error { return c.DeleteFenced(ctx, "a", 1) },
				"getkv":  func() error { _, _, err := c.GetFenced(ctx, "a"); return err },
				"health": func() error { return c.Health(ctx) },
			}
			for op, call := range calls {
				err := call()
				if op == "health" && errors.Is(tc.err, lease.ErrNotFound) {
					// A store without a Health method is healthy when Get answers,
					// not found included.
					if err != nil {
						t.Errorf("health: %v, want nil", err)
					}
					continue
				}
				var apiErr *httpapi.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("%s: %v (%T) is not an *httpapi.Error", op, err, err)
				}
				if op == "health" { // a failed health check is always unavailable
					if apiErr.Status != 503 || !errors.Is(err, lease.ErrUnavailable) {
						t.Errorf("health: %v, want 503 unavailable", err)
					}
					continue
				}
				if apiErr.Status != tc.status || apiErr.Code != tc.code {
					t.Errorf("%s: %d %s, want %d %s", op, apiErr.Status, apiErr.Code, tc.status, tc.code)
				}
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: %v does not match %v", op, err, tc.want)
				}
				if errors.Is(tc.want, lease.ErrUnknown) != errors.Is(err, lease.ErrUnknown) || errors.Is(tc.want, lease.ErrUnknown) && !errors.Is(err, lease.ErrUnavailable) {
					t.Errorf("%s: %v: ErrUnknown %v, ErrUnavailable %v; want ErrUnknown only for an unknown outcome, with ErrUnavailable", op, err,
						errors.Is(err, lease.ErrUnknown), errors.Is(err, lease.ErrUnavailable))
				}
				if tc.code == "internal" && strings.Contains(apiErr.Message, "fire") {
					t.Errorf("%s: internal details leaked: %q", op, apiErr.Message)
				}
			}
		})
	}
}
