package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ lease.Revoker = (*Store)(nil)

// revokedRecord is the value of picket/revoked/NAME: the last revocation
// of NAME, so that its holder's next renew or release is told "revoked".
// Kept a day (no lease lives longer), deleted by the sweep after.
type revokedRecord struct {
	Token  int64  `json:"tok"`
	Reason string `json:"r,omitempty"`
	By     string `json:"b,omitempty"`
	At     int64  `json:"t"` // Unix nanoseconds
}

func (k keys) revoked(name string) string { return k.prefix + "revoked/" + name }
func (k keys) revokedAll() string         { return k.prefix + "revoked/" }

// Revoke ends the live lease on req.Name (see lease.Revoker): one
// transaction, comparing the lease key's mod revision with the one read,
// deletes it and the holder's queue key, writes the revocation and the
// history event. The waiters' watches see the delete, as after a release.
// The revoked token is a revision: never handed out again.
//
// Errors: lease.ErrInvalid, lease.ErrNotFound when no live lease matches,
// an *UnavailableError, ErrClosed, or ctx's error.
func (s *Store) Revoke(ctx context.Context, req lease.RevokeRequest) (lease.Info, error) {
	if err := req.Validate(); err != nil {
		return lease.Info{}, fmt.Errorf("etcd: revoke: %w", err)
	}
	if s.closed() {
		return lease.Info{}, ErrClosed
	}
	k := s.keys.lease(req.Name)
	for range attempts {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, k)
		cancel()
		if err != nil {
			return lease.Info{}, failed(ctx, "revoke", req.Name, false, err)
		}
		notFound := fmt.Errorf("etcd: revoke %q: no live lease%s: %w", req.Name, withToken(req.Token), lease.ErrNotFound)
		if len(resp.Kvs) == 0 {
			return lease.Info{}, notFound
		}
		kv := resp.Kvs[0]
		live, err := s.live(ctx, req.Name, kv)
		if err != nil {
			return lease.Info{}, err
		}
		if !live {
			return lease.Info{}, notFound
		}
		info, r, h, err := leaseInfo(req.Name, kv)
		if err != nil {
			return lease.Info{}, err
		}
		if req.Token != 0 && info.Token != req.Token {
			return lease.Info{}, notFound
		}
		now := time.Now()
		rec, _ := json.Marshal(revokedRecord{Token: int64(info.Token), Reason: req.Reason, By: req.By, At: now.UnixNano()})
		then := []clientv3.Op{clientv3.OpDelete(k), clientv3.OpDelete(s.keys.queue(req.Name)+h, clientv3.WithPrefix()),
			clientv3.OpPut(s.keys.revoked(req.Name), string(rec))}
		then = append(then, s.eventOp(lease.Event{Kind: lease.EventRevoke, Name: req.Name, Token: info.Token, Owner: r.Owner,
			Reason: req.Reason, By: req.By}, 0)...)
		rctx, cancel = s.rpc(ctx)
		tr, err := s.client.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).Then(then...).Commit()
		cancel()
		if err != nil {
			return lease.Info{}, failed(ctx, "revoke", req.Name, true, err)
		}
		if tr.Succeeded {
			s.seen.forget(k)
			return info, nil
		}
		// Renewed (or released) meanwhile: look again.
	}
	return lease.Info{}, &UnavailableError{Op: "revoke", Name: req.Name, Cause: fmt.Errorf("the lease changed under every attempt")}
}

func withToken(t token.Token) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", t)
}

// lostOrRevoked is the error of a renew or release of name with tok that
// found no such lease: a *lease.RevokedError when it was revoked (one read
// of the revocation, on this path only), else lost's.
func (s *Store) lostOrRevoked(ctx context.Context, op, name string, tok token.Token) error {
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Get(rctx, s.keys.revoked(name))
	cancel()
	if err == nil && len(resp.Kvs) > 0 {
		var r revokedRecord
		if json.Unmarshal(resp.Kvs[0].Value, &r) == nil && token.Token(r.Token) == tok {
			return fmt.Errorf("etcd: %s %q: %w", op, name,
				&lease.RevokedError{Name: name, Token: tok, Reason: r.Reason, By: r.By, At: time.Unix(0, r.At).UTC()})
		}
	}
	return lost(op, name)
}

// pruneRevoked deletes the revocations older than lease.MaxTTL.
func (s *Store) pruneRevoked(ctx context.Context) {
	resp, err := s.client.Get(ctx, s.keys.revokedAll(), clientv3.WithPrefix(), clientv3.WithLimit(4096))
	if err != nil {
		return
	}
	cut := time.Now().Add(-lease.MaxTTL).UnixNano()
	for _, kv := range resp.Kvs {
		var r revokedRecord
		if json.Unmarshal(kv.Value, &r) == nil && r.At < cut {
			_, _ = s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
				Then(clientv3.OpDelete(string(kv.Key))).Commit()
		}
	}
}
