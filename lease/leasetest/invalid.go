package leasetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// testBounds: the edges of every bound are accepted: TTLs of exactly 10 ms
// and 24 h, a 256-byte name, multi-byte UTF-8, an empty owner, a Wait of
// exactly lease.MaxWait.
func (s suite) testBounds(t *testing.T) {
	st, clk := s.open(t, 0)
	lo := mustAcquire(t, st, request("bounds/min-ttl", "holder-a", lease.MinTTL))
	if lo.TTL != lease.MinTTL {
		t.Errorf("TTL = %v, want %v", lo.TTL, lease.MinTTL)
	}
	hi := mustAcquire(t, st, request("bounds/max-ttl", "holder-b", lease.MaxTTL))
	if hi.TTL != lease.MaxTTL {
		t.Errorf("TTL = %v, want %v", hi.TTL, lease.MaxTTL)
	}
	if _, err := renew(st, hi, lease.MinTTL); err != nil {
		t.Errorf("Renew(ttl %v): %v", lease.MinTTL, err)
	}
	if _, err := renew(st, hi, lease.MaxTTL); err != nil {
		t.Errorf("Renew(ttl %v): %v", lease.MaxTTL, err)
	}
	long := "bounds/" + strings.Repeat("x", lease.MaxNameLen-len("bounds/"))
	mustAcquire(t, st, request(long, "holder-c", time.Minute))
	mustGet(t, st, long)
	mustAcquire(t, st, request("bounds/ключ-✓-日本", "holder-d", time.Minute))
	noOwner := request("bounds/no-owner", "holder-e", time.Minute)
	noOwner.Owner = ""
	if g := mustAcquire(t, st, noOwner); g.Owner != "" {
		t.Errorf("Owner = %q, want empty", g.Owner)
	}
	wait := request("bounds/max-wait", "holder-f", time.Minute)
	wait.Wait = lease.MaxWait
	mustAcquire(t, st, wait) // free: granted at once

	clk.Advance(lease.MinTTL)
	wantFree(t, st, "bounds/min-ttl", lo.Token, 0)
}

// testInvalid: every malformed request is ErrInvalid, and nothing is written:
// no lease appears or changes, and no token is used up.
func (s suite) testInvalid(t *testing.T) {
	st, clk := s.open(t, 0)
	live := mustAcquire(t, st, request("invalid/live", "holder-a", 10*time.Second))
	before, err := lease.ListAll(t.Context(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)

	acq := func(mod func(r *lease.AcquireRequest)) func(context.Context, lease.Store) error {
		return func(ctx context.Context, st lease.Store) error {
			r := request("invalid/new", "holder-b", time.Minute)
			mod(&r)
			_, err := st.Acquire(ctx, r)
			return err
		}
	}
	ren := func(name, holder string, tok token.Token, ttl time.Duration) func(context.Context, lease.Store) error {
		return func(ctx context.Context, st lease.Store) error {
			_, err := st.Renew(ctx, lease.RenewRequest{Name: name, Holder: holder, Token: tok, TTL: ttl})
			return err
		}
	}
	rel := func(name, holder string, tok token.Token) func(context.Context, lease.Store) error {
		return func(ctx context.Context, st lease.Store) error {
			return st.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: tok})
		}
	}
	get := func(name string) func(context.Context, lease.Store) error {
		return func(ctx context.Context, st lease.Store) error { _, err := st.Get(ctx, name); return err }
	}
	list := func(prefix string) func(context.Context, lease.Store) error {
		return listPage(lease.ListRequest{Prefix: prefix})
	}
	tooLong := "invalid/" + strings.Repeat("x", lease.MaxNameLen)
	n, h, tok := live.Name, live.Holder, live.Token
	tests := []struct {
		name string
		call func(context.Context, lease.Store) error
	}{
		{"acquire empty name", acq(func(r *lease.AcquireRequest) { r.Name = "" })},
		{"acquire 257-byte name", acq(func(r *lease.AcquireRequest) { r.Name = tooLong[:lease.MaxNameLen+1] })},
		{"acquire NUL in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/a\x00b" })},
		{"acquire newline in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/a\nb" })},
		{"acquire DEL in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/\x7f" })},
		{"acquire C1 control in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/\u0085" })},
		{"acquire invalid UTF-8 name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/\xff" })},
		{"acquire TTL 0", acq(func(r *lease.AcquireRequest) { r.TTL = 0 })},
		{"acquire TTL 9ms", acq(func(r *lease.AcquireRequest) { r.TTL = 9 * time.Millisecond })},
		{"acquire TTL 24h+1ms", acq(func(r *lease.AcquireRequest) { r.TTL = lease.MaxTTL + time.Millisecond })},
		{"acquire TTL 1.5ms", acq(func(r *lease.AcquireRequest) { r.TTL = 1500 * time.Microsecond })},
		{"acquire TTL 10.5ms", acq(func(r *lease.AcquireRequest) { r.TTL = 10500 * time.Microsecond })},
		{"acquire negative TTL", acq(func(r *lease.AcquireRequest) { r.TTL = -time.Second })},
		{"acquire empty holder", acq(func(r *lease.AcquireRequest) { r.Holder = "" })},
		{"acquire 257-byte holder", acq(func(r *lease.AcquireRequest) { r.Holder = tooLong[:lease.MaxHolderLen+1] })},
		{"acquire control in holder", acq(func(r *lease.AcquireRequest) { r.Holder = "h\tx" })},
		{"acquire 257-byte owner", acq(func(r *lease.AcquireRequest) { r.Owner = tooLong[:lease.MaxOwnerLen+1] })},
		{"acquire control in owner", acq(func(r *lease.AcquireRequest) { r.Owner = "o\rx" })},
		{"acquire negative wait", acq(func(r *lease.AcquireRequest) { r.Wait = -time.Millisecond })},
		{"acquire wait over MaxWait", acq(func(r *lease.AcquireRequest) { r.Wait = lease.MaxWait + time.Millisecond })},
		{"acquire held name, bad wait", acq(func(r *lease.AcquireRequest) { r.Name, r.Wait = n, -time.Second })},
		{"re-acquire by holder, bad TTL", acq(func(r *lease.AcquireRequest) { r.Name, r.Holder, r.TTL = n, h, 9*time.Millisecond })},
		{"renew zero token", ren(n, h, 0, 0)},
		{"renew token above Max", ren(n, h, token.Max+1, 0)},
		{"renew empty name", ren("", h, tok, 0)},
		{"renew invalid UTF-8 name", ren("invalid/\xfe", h, tok, 0)},
		{"renew empty holder", ren(n, "", tok, 0)},
		{"renew TTL 9ms", ren(n, h, tok, 9*time.Millisecond)},
		{"renew TTL 1.5ms", ren(n, h, tok, 1500*time.Microsecond)},
		{"renew TTL 24h+1ms", ren(n, h, tok, lease.MaxTTL+time.Millisecond)},
		{"renew negative TTL", ren(n, h, tok, -time.Second)},
		{"release zero token", rel(n, h, 0)},
		{"release token above Max", rel(n, h, token.Max+1)},
		{"release empty name", rel("", h, tok)},
		{"release control in name", rel("invalid/\x1b", h, tok)},
		{"release empty holder", rel(n, "", tok)},
		{"get empty name", get("")},
		{"get control in name", get("invalid/\x00")},
		{"get 257-byte name", get(tooLong[:lease.MaxNameLen+1])},
		{"get invalid UTF-8 name", get("\xc3")},
		{"list control in prefix", list("invalid/\n")},
		{"list 257-byte prefix", list(tooLong[:lease.MaxPrefixLen+1])},
		{"list invalid UTF-8 prefix", list("\xff")},
		{"list negative limit", listPage(lease.ListRequest{Limit: -1})},
		{"list limit above the most", listPage(lease.ListRequest{Limit: lease.MaxListLimit + 1})},
		{"list control in after", listPage(lease.ListRequest{After: "a\nb"})},
		{"acquire zero-width space in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/a\u200bb" })},
		{"acquire bidi override in name", acq(func(r *lease.AcquireRequest) { r.Name = "invalid/\u202eb" })},
		{"acquire negative lock delay", acq(func(r *lease.AcquireRequest) { r.LockDelay = -time.Millisecond })},
		{"acquire lock delay above the most", acq(func(r *lease.AcquireRequest) { r.LockDelay = lease.MaxLockDelay + time.Millisecond })},
		{"acquire lock delay not whole ms", acq(func(r *lease.AcquireRequest) { r.LockDelay = time.Microsecond })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name, tc.call(t.Context(), st), lease.ErrInvalid)
		})
	}

	after, err := lease.ListAll(t.Context(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("invalid requests changed the leases (-want +got):\n%s", diff)
	}
	wantHeld(t, st, n, live.Owner, live.Expires)
	wantFree(t, st, "invalid/new", live.Token, live.Token+1)
}

func listPage(req lease.ListRequest) func(context.Context, lease.Store) error {
	return func(ctx context.Context, st lease.Store) error { _, err := st.List(ctx, req); return err }
}
