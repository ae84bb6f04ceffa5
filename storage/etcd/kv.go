package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxValueLen is the largest value PutFenced stores: 1 MiB (etcd's default
// request limit is 1.5 MiB).
const MaxValueLen = 1 << 20

// A fenced key's value: the highest token as tokenDigits hexadecimal digits,
// then a flag (value or deleted), then the value. Fixed-width digits sort as
// numbers, so "highest token ≤ t" is one byte-order comparison: the whole
// value is lower than the digits of t+1.
const (
	tokenDigits = 16
	flagValue   = 'v'
	flagDeleted = 'd'
)

func tokenText(t token.Token) string { return fmt.Sprintf("%0*x", tokenDigits, uint64(t)) }

func encodeFenced(t token.Token, flag byte, value []byte) string {
	b := make([]byte, 0, tokenDigits+1+len(value))
	b = append(b, tokenText(t)...)
	b = append(b, flag)
	return string(append(b, value...))
}

func decodeFenced(v []byte) (token.Token, byte, []byte, error) {
	if len(v) < tokenDigits+1 {
		return 0, 0, nil, fmt.Errorf("etcd: a fenced value that picket did not write (%d bytes)", len(v))
	}
	t, err := strconv.ParseUint(string(v[:tokenDigits]), 16, 64)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("etcd: a fenced value that picket did not write: %w", err)
	}
	return token.Token(t), v[tokenDigits], v[tokenDigits+1:], nil
}

// PutFenced stores value under key with the fencing token tok, unless key
// has already seen a higher token; an equal token is accepted (a holder may
// write many times). The check and the write are one transaction.
//
// Errors: lease.ErrInvalid for a bad key, a zero token, a token above
// token.Max or above the cluster's revision (never issued), or a value over
// MaxValueLen (nothing is written); a *token.StaleError (token.ErrStale)
// carrying the highest token when tok is lower; an *UnavailableError,
// ErrClosed, or ctx's error.
func (s *Store) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	if len(value) > MaxValueLen {
		return invalidf("put %q: value of %d bytes is larger than %d", key, len(value), MaxValueLen)
	}
	return s.writeFenced(ctx, "put", key, tok, flagValue, value)
}

// DeleteFenced removes the value under key if tok is not lower than the
// highest token key has seen, and keeps tok as the key's highest, so a later
// write with a lower one stays stale. Deleting a key that has no value
// records the token all the same (as storage/sqlite does).
//
// Errors: as PutFenced's.
func (s *Store) DeleteFenced(ctx context.Context, key string, tok token.Token) error {
	return s.writeFenced(ctx, "delete", key, tok, flagDeleted, nil)
}

func (s *Store) writeFenced(ctx context.Context, op, key string, tok token.Token, flag byte, value []byte) error {
	if err := storekit.ValidateName(key); err != nil {
		return fmt.Errorf("etcd: %s: %w", op, err)
	}
	if err := storekit.ValidateToken(tok); err != nil {
		return fmt.Errorf("etcd: %s %q: %w", op, key, err)
	}
	if s.closed() {
		return ErrClosed
	}
	k := s.keys.kv(key)
	for {
		// The key and the token floor (floor.go), read together.
		rctx, cancel := s.rpc(ctx)
		cur, err := s.client.Txn(rctx).Then(clientv3.OpGet(k), clientv3.OpGet(s.keys.floor())).Commit()
		cancel()
		if err != nil {
			return failed(ctx, op, key, false, err)
		}
		f, err := s.sawFloor(firstKV(cur.Responses[1]))
		if err != nil {
			return err
		}
		// Revisions only grow: a token above the one the revision read now
		// makes was never issued, and never will have been when the write
		// below happens.
		if tok > tokenOf(cur.Header.Revision, f.Offset) {
			return invalidf("%s %q: token %d was never issued (the cluster is at token %d)", op, key, tok, tokenOf(cur.Header.Revision, f.Offset))
		}
		// Every token up to the floor was handed out before the cluster was
		// restored or replaced: a newer holder may have written the key
		// since, whatever the restored key says.
		if int64(tok) <= f.Floor {
			highest := token.Token(f.Floor)
			if kv := firstKV(cur.Responses[0]); kv != nil {
				if h, _, _, err := decodeFenced(kv.Value); err == nil {
					highest = max(highest, h)
				}
			}
			return fmt.Errorf("etcd: %s %q: %w", op, key, &token.StaleError{Resource: key, Token: tok, Highest: highest})
		}
		stored := encodeFenced(tok, flag, value)
		var usage []clientv3.Cmp
		var writes []clientv3.Op
		if kv := firstKV(cur.Responses[0]); kv == nil || kv.Value == nil || string(kv.Value) < tokenText(tok+1) {
			// A write that is not stale: within the KV quota (quota.go)?
			if usage, writes, err = s.kvQuota(ctx, op, key, kv, stored); err != nil {
				return err
			}
		}
		writes = append(writes, clientv3.OpPut(k, stored))
		notHigher := clientv3.Compare(clientv3.Value(k), "<", tokenText(tok+1)) // false on a missing key
		absent := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)}
		refused := append([]clientv3.Op{clientv3.OpGet(k)}, s.eventOp(lease.Event{Kind: lease.EventFenced, Name: key, Token: tok,
			Reason: "a higher token was seen"}, 0)...) // history.go: the refusal, in its transaction
		present := clientv3.OpTxn([]clientv3.Cmp{notHigher}, writes, refused)
		rctx, cancel = s.rpc(ctx)
		resp, err := s.client.Txn(rctx).If(append(usage, s.floorUnchanged(f))...).
			Then(clientv3.OpTxn(absent, writes, []clientv3.Op{present})).
			Else(clientv3.OpGet(s.keys.floor())).Commit()
		cancel()
		if err != nil {
			return failed(ctx, op, key, true, err)
		}
		if !resp.Succeeded {
			_, _ = s.floorFrom(resp) // raised meanwhile (or the usage changed): judge the token again
			continue
		}
		outer := resp.Responses[0].GetResponseTxn()
		if outer.Succeeded || outer.Responses[0].GetResponseTxn().Succeeded {
			return nil
		}
		kvs := outer.Responses[0].GetResponseTxn().Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return failed(ctx, op, key, true, errors.New("the fenced key vanished during the write"))
		}
		highest, _, _, err := decodeFenced(kvs[0].Value)
		if err != nil {
			return err
		}
		return fmt.Errorf("etcd: %s %q: %w", op, key, &token.StaleError{Resource: key, Token: tok, Highest: highest})
	}
}

// firstKV returns the first key of a range response, or nil.
func firstKV(r *etcdserverpb.ResponseOp) *mvccpb.KeyValue {
	if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
		return kvs[0]
	}
	return nil
}

// GetFenced returns the value stored under key and the highest token key
// has seen.
//
// Errors: lease.ErrInvalid, lease.ErrNoKey, matching lease.ErrNotFound (never written, or deleted),
// an *UnavailableError, ErrClosed, or ctx's error.
func (s *Store) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	if err := storekit.ValidateName(key); err != nil {
		return nil, 0, fmt.Errorf("etcd: get fenced: %w", err)
	}
	if s.closed() {
		return nil, 0, ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Txn(rctx).Then(clientv3.OpGet(s.keys.kv(key)), clientv3.OpGet(s.keys.floor())).Commit()
	cancel()
	if err != nil {
		return nil, 0, failed(ctx, "get fenced", key, false, err)
	}
	kv := firstKV(resp.Responses[0])
	if kv == nil {
		return nil, 0, fmt.Errorf("etcd: get fenced %q: %w", key, lease.ErrNoKey)
	}
	tok, flag, value, err := decodeFenced(kv.Value)
	if err != nil {
		return nil, 0, err
	}
	f, err := s.sawFloor(firstKV(resp.Responses[1]))
	if err != nil {
		return nil, 0, err
	}
	tok = max(tok, token.Token(f.Floor)) // a raised floor raises every key (floor.go)
	if flag == flagDeleted {
		return nil, tok, fmt.Errorf("etcd: get fenced %q: %w", key, lease.ErrNoKey)
	}
	if value == nil {
		value = []byte{}
	}
	return value, tok, nil
}
