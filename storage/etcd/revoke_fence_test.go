package etcd_test

import (
	"errors"
	"testing"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
)

// TestRevokedHolderFenced: issue 22's promise end to end on etcd (as on SQLite) — after a revoke
// the next grant of the name carries a higher token, and once its holder
// has written, the fenced store refuses the revoked holder's write (which
// it accepted before the revoke) as stale.
func TestRevokedHolderFenced(t *testing.T) {
	s := mustOpen(t, etcdtest.Start(t, 1), etcd.WithPrefix("revoke-fenced"))
	ctx := t.Context()
	old := grantOn(t, s, "revoke/fenced", "holder-old")
	if err := s.PutFenced(ctx, "data", []byte("old"), old.Token); err != nil {
		t.Fatalf("the holder's write before the revoke: %v", err)
	}
	if _, err := s.Revoke(ctx, lease.RevokeRequest{Name: old.Name, Token: old.Token, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	next := grantOn(t, s, old.Name, "holder-next")
	if next.Token <= old.Token {
		t.Fatalf("the grant after the revoke has token %d, want more than the revoked %d", next.Token, old.Token)
	}
	if err := s.PutFenced(ctx, "data", []byte("next"), next.Token); err != nil {
		t.Fatalf("the successor's write: %v", err)
	}
	err := s.PutFenced(ctx, "data", []byte("late"), old.Token)
	if !errors.Is(err, token.ErrStale) {
		t.Fatalf("the revoked holder's late write: %v, want token.ErrStale", err)
	}
	v, tok, err := s.GetFenced(ctx, "data")
	if err != nil || string(v) != "next" || tok != next.Token {
		t.Errorf("data = %q with token %d, %v; want %q with %d", v, tok, err, "next", next.Token)
	}
}
