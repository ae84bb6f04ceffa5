package leasetest

import (
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// testLost: renew and release need the name, holder and token of a live
// lease. Anything else is ErrLost and leaves the real holder's lease alone.
func (s suite) testLost(t *testing.T) {
	// Each case sets up a lease and returns the (wrong) grant to renew and
	// release with, and the live grant that must be untouched (if any).
	tests := []struct {
		name  string
		setup func(t *testing.T, st lease.Store, clk *Clock) (wrong, live lease.Grant)
	}{
		{"wrong holder", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/holder", "holder-a", 10*time.Second))
			w := g
			w.Holder = "holder-b"
			return w, g
		}},
		{"wrong token", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/token", "holder-a", 10*time.Second))
			w := g
			w.Token = g.Token + 1000
			return w, g
		}},
		{"older token", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			old := mustAcquire(t, st, request("lost/older", "holder-a", 10*time.Second))
			mustRelease(t, st, old)
			g := mustAcquire(t, st, request("lost/older", "holder-a", 10*time.Second))
			return old, g
		}},
		{"unknown name", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/known", "holder-a", 10*time.Second))
			w := g
			w.Name = "lost/unknown"
			return w, g
		}},
		{"after release", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/released", "holder-a", 10*time.Second))
			mustRelease(t, st, g)
			return g, lease.Grant{}
		}},
		{"after expiry, not taken", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/expired", "holder-a", 10*time.Second))
			clk.Advance(11 * time.Second)
			return g, lease.Grant{}
		}},
		{"after expiry, taken", func(t *testing.T, st lease.Store, clk *Clock) (lease.Grant, lease.Grant) {
			g := mustAcquire(t, st, request("lost/taken", "holder-a", 10*time.Second))
			clk.Advance(11 * time.Second)
			next := mustAcquire(t, st, request("lost/taken", "holder-b", 10*time.Second))
			return g, next
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s.h.RealTime != nil && clockCase(tc.name) {
				t.Skip("the store's clock cannot be moved: RealTimeExpiry checks this")
			}
			st, clk := s.open(t, 0)
			wrong, live := tc.setup(t, st, clk)
			_, err := renew(st, wrong, 0)
			wantErr(t, "Renew", err, lease.ErrLost)
			_, err = renew(st, wrong, 20*time.Second)
			wantErr(t, "Renew with a TTL", err, lease.ErrLost)
			wantErr(t, "Release", release(st, wrong), lease.ErrLost)
			if live.Token != 0 {
				wantUntouched(t, st, live)
			} else {
				_, err := st.Get(t.Context(), wrong.Name)
				wantErr(t, "Get", err, lease.ErrNotFound)
			}
		})
	}
}

// wantUntouched checks that the live grant g is still held as it was granted
// and that its holder can still renew it.
func wantUntouched(t *testing.T, st lease.Store, g lease.Grant) {
	t.Helper()
	info := mustGet(t, st, g.Name)
	if info.Token != g.Token || info.TTL != g.TTL || !info.Expires.Equal(g.Expires) {
		t.Errorf("live lease changed: got token %d ttl %v expires %v, want token %d ttl %v expires %v",
			info.Token, info.TTL, info.Expires, g.Token, g.TTL, g.Expires)
	}
	var tok token.Token
	if got, err := renew(st, g, 0); err != nil {
		t.Errorf("the real holder's Renew: %v", err)
	} else {
		tok = got.Token
	}
	if tok != g.Token {
		t.Errorf("the real holder's Renew: token %d, want %d", tok, g.Token)
	}
}

// clockCase reports whether the Lost case of that name advances the clock.
func clockCase(name string) bool { return strings.HasPrefix(name, "after expiry") }
