package leasetest

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// testRevokedHolderFenced: issue 22's promise end to end, on a store that
// is also a fenced KV — after a revoke the next grant of the name carries a
// higher token, and once its holder has written, the store refuses the
// revoked holder's write (which it accepted before the revoke) as stale,
// and the key keeps the successor's value.
func (s suite) testRevokedHolderFenced(t *testing.T) {
	st := s.openAny(t)
	rv := revoker(t, st)
	kv, ok := st.(lease.KV)
	if !ok {
		t.Skipf("%T does not implement lease.KV", st)
	}
	ctx := t.Context()
	old := mustAcquire(t, st, request("revoke/fenced", "holder-old", time.Hour))
	if err := kv.PutFenced(ctx, "revoke/data", []byte("old"), old.Token); err != nil {
		t.Fatalf("the holder's write before the revoke: %v", err)
	}
	if _, err := rv.Revoke(ctx, lease.RevokeRequest{Name: old.Name, Token: old.Token, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	next := mustAcquire(t, st, request(old.Name, "holder-next", time.Hour))
	if next.Token <= old.Token {
		t.Fatalf("the grant after the revoke has token %d, want more than the revoked %d", next.Token, old.Token)
	}
	if err := kv.PutFenced(ctx, "revoke/data", []byte("next"), next.Token); err != nil {
		t.Fatalf("the successor's write: %v", err)
	}
	err := kv.PutFenced(ctx, "revoke/data", []byte("late"), old.Token)
	if !errors.Is(err, token.ErrStale) {
		t.Fatalf("the revoked holder's late write: %v, want token.ErrStale", err)
	}
	v, tok, err := kv.GetFenced(ctx, "revoke/data")
	if err != nil || string(v) != "next" || tok != next.Token {
		t.Errorf("data = %q with token %d, %v; want %q with %d", v, tok, err, "next", next.Token)
	}
}
