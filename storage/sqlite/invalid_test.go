package sqlite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// TestBadInput: every malformed request fails with a clear error (ErrInvalid,
// or ErrLost for a lease that is not the caller's) and writes nothing: the
// file's counter and rows are unchanged, and the next grant's token is the
// previous one plus one.
func TestBadInput(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	held := acquire(t, s, "held", "holder", time.Hour)
	before := readFileState(t, s.Path())

	long := strings.Repeat("x", lease.MaxNameLen+1)
	req := func(mod func(r *lease.AcquireRequest)) func() error {
		return func() error {
			r := lease.AcquireRequest{Name: "n", Holder: "h", TTL: time.Minute}
			mod(&r)
			_, err := s.Acquire(ctx, r)
			return err
		}
	}
	renew := func(name, holder string, tok token.Token, ttl time.Duration) func() error {
		return func() error {
			_, err := s.Renew(ctx, lease.RenewRequest{Name: name, Holder: holder, Token: tok, TTL: ttl})
			return err
		}
	}
	release := func(name, holder string, tok token.Token) func() error {
		return func() error { return s.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: tok}) }
	}
	put := func(key string, value []byte, tok token.Token) func() error {
		return func() error { return s.PutFenced(ctx, key, value, tok) }
	}
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"empty name", req(func(r *lease.AcquireRequest) { r.Name = "" }), lease.ErrInvalid},
		{"long name", req(func(r *lease.AcquireRequest) { r.Name = long }), lease.ErrInvalid},
		{"control character", req(func(r *lease.AcquireRequest) { r.Name = "a\nb" }), lease.ErrInvalid},
		{"NUL", req(func(r *lease.AcquireRequest) { r.Name = "a\x00b" }), lease.ErrInvalid},
		{"invalid UTF-8", req(func(r *lease.AcquireRequest) { r.Name = "a\xffb" }), lease.ErrInvalid},
		{"empty holder", req(func(r *lease.AcquireRequest) { r.Holder = "" }), lease.ErrInvalid},
		{"owner with DEL", req(func(r *lease.AcquireRequest) { r.Owner = "a\x7fb" }), lease.ErrInvalid},
		{"ttl too short", req(func(r *lease.AcquireRequest) { r.TTL = 9 * time.Millisecond }), lease.ErrInvalid},
		{"ttl too long", req(func(r *lease.AcquireRequest) { r.TTL = 25 * time.Hour }), lease.ErrInvalid},
		{"zero ttl", req(func(r *lease.AcquireRequest) { r.TTL = 0 }), lease.ErrInvalid},
		{"ttl not whole ms", req(func(r *lease.AcquireRequest) { r.TTL = time.Second + time.Microsecond }), lease.ErrInvalid},
		{"negative wait", req(func(r *lease.AcquireRequest) { r.Wait = -1 }), lease.ErrInvalid},
		{"wait too long", req(func(r *lease.AcquireRequest) { r.Wait = lease.MaxWait + 1 }), lease.ErrInvalid},
		{"renew zero token", renew("held", "holder", 0, 0), lease.ErrInvalid},
		{"renew token above max", renew("held", "holder", token.Max+1, 0), lease.ErrInvalid},
		{"renew bad ttl", renew("held", "holder", held.Token, time.Millisecond), lease.ErrInvalid},
		{"renew unknown holder", renew("held", "stranger", held.Token, 0), lease.ErrLost},
		{"renew wrong token", renew("held", "holder", held.Token+1, 0), lease.ErrLost},
		{"renew unknown name", renew("nobody", "holder", held.Token, 0), lease.ErrLost},
		{"release zero token", release("held", "holder", 0), lease.ErrInvalid},
		{"release empty name", release("", "holder", held.Token), lease.ErrInvalid},
		{"release unknown holder", release("held", "stranger", held.Token), lease.ErrLost},
		{"release wrong token", release("held", "holder", held.Token+1), lease.ErrLost},
		{"put empty key", put("", []byte("v"), 1), lease.ErrInvalid},
		{"put key with tab", put("a\tb", []byte("v"), 1), lease.ErrInvalid},
		{"put long key", put(long, []byte("v"), 1), lease.ErrInvalid},
		{"put zero token", put("k", []byte("v"), 0), lease.ErrInvalid},
		{"put token above max", put("k", []byte("v"), token.Max+1), lease.ErrInvalid},
		{"put value too large", put("k", make([]byte, 1<<20+1), 1), lease.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want an error matching %v", err, tc.want)
			}
			if after := readFileState(t, s.Path()); after != before {
				t.Errorf("the file changed (-before +after):\n%s", cmp.Diff(before, after))
			}
		})
	}
	for name, err := range map[string]error{
		"Get":       getErr(s.Get(ctx, "a\x01")),
		"List":      listErr(s.List(ctx, lease.ListRequest{Prefix: "\xff"})),
		"GetFenced": getFencedErr(s.GetFenced(ctx, "")),
	} {
		if !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if g := acquire(t, s, "next", "h", time.Minute); g.Token != held.Token+1 {
		t.Errorf("after the bad requests the next token is %d, want %d", g.Token, held.Token+1)
	}
}

func getErr(_ lease.Info, err error) error                  { return err }
func listErr(_ lease.ListPage, err error) error             { return err }
func getFencedErr(_ []byte, _ token.Token, err error) error { return err }
