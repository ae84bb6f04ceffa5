package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The token floor. A token is the revision of the transaction that granted
// it plus an offset kept in the cluster, under <prefix>/floor: zero until
// RaiseFloor (picket restore -etcd -token-floor N) raises it after a
// snapshot restore or a cluster replacement, whose revisions start again
// below tokens already handed out. Every grant compares the floor key's
// revision with the one its store last read, so a store that has not seen a
// raise cannot grant with the old offset; a lease key's record keeps the
// offset it was granted under, so its token stays what it was. The fenced
// KV refuses every token at or below the floor.

// floorRecord is the floor key's value.
type floorRecord struct {
	Offset int64 `json:"offset"` // added to revisions
	Floor  int64 `json:"floor"`  // every token at or below it was handed out before the raise
}

// floorState is a store's copy of the floor key: its record and its mod
// revision (0: no key, the zero floor).
type floorState struct {
	floorRecord
	rev int64
}

// tokenOf is the token of a grant committed at revision rev under offset:
// the one place revisions become tokens.
func tokenOf(rev, offset int64) token.Token { return token.Token(rev + offset) }

// revisionOf returns the create revision of the lease key of a grant of
// tok under the floor the store knows.
func (s *Store) revisionOf(tok token.Token) int64 { return int64(tok) - s.floorNow().Offset }

// floorCache is a store's last reading of the floor key.
type floorCache struct {
	mu    sync.Mutex
	state floorState
}

// floorKey is the key of the floor.
func (k keys) floor() string { return k.prefix + "floor" }

func decodeFloor(kv *mvccpb.KeyValue) (floorState, error) {
	if kv == nil {
		return floorState{}, nil
	}
	var f floorState
	if err := json.Unmarshal(kv.Value, &f.floorRecord); err != nil {
		return floorState{}, fmt.Errorf("etcd: the token floor %q is not picket's: %w", kv.Key, err)
	}
	f.rev = kv.ModRevision
	return f, nil
}

// floorNow returns the floor the store knows: none until it has read the
// floor key. Guessing "none" costs no request: a grant compares the guess
// (the key's mod revision, 0 for no key) in its transaction, and one that
// fails reads the key in its Else branch (floorFrom) and tries again.
func (s *Store) floorNow() floorState {
	s.floor.mu.Lock()
	defer s.floor.mu.Unlock()
	return s.floor.state
}

// sawFloor remembers the floor key kv (nil: none) as read in some response.
func (s *Store) sawFloor(kv *mvccpb.KeyValue) (floorState, error) {
	f, err := decodeFloor(kv)
	if err != nil {
		return floorState{}, err
	}
	s.floor.mu.Lock()
	defer s.floor.mu.Unlock()
	// Any other reading replaces it, not only a later one: a cluster wiped
	// and started again has its floor key (if any) at a lower revision. A
	// reading older than the one kept costs one failed grant and a new
	// reading.
	s.floor.state = f
	return s.floor.state, nil
}

// floorCmp is the comparison a grant makes: the floor key is still the one
// f was read from.
func (s *Store) floorCmp(f floorState) *pb.Compare {
	return cmpMod(s.keys.floor(), pb.Compare_EQUAL, f.rev)
}

// floorUnchanged is floorCmp for clientv3's Txn builder.
func (s *Store) floorUnchanged(f floorState) clientv3.Cmp { return clientv3.FromCompare(s.floorCmp(f)) }

// floorFrom remembers the floor key read by the last operation of a
// transaction's response (the Else branch of a grant or a fenced write
// whose comparison failed): no key there is the zero floor. It returns the
// floor now known.
func (s *Store) floorFrom(r *clientv3.TxnResponse) (floorState, error) {
	n := len(r.Responses)
	if n == 0 || r.Responses[n-1].GetResponseRange() == nil {
		return s.floorNow(), nil
	}
	var kv *mvccpb.KeyValue
	if kvs := r.Responses[n-1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		if string(kvs[0].Key) != s.keys.floor() {
			return s.floorNow(), nil
		}
		kv = kvs[0]
	}
	return s.sawFloor(kv)
}

// RaiseFloor makes every token the store's prefix hands out from now on
// greater than floor, and makes the fenced KV refuse every token up to
// floor, whatever the cluster's revision: after a snapshot restore or a
// cluster replacement, give it a floor at least as high as every token
// handed out before (the highest token your fenced resources have seen, for
// instance). A floor at or below the current one changes nothing. It
// returns the floor and the offset now in force.
//
// Leases granted before the raise keep their tokens. Stores that have not
// seen the raise find out at their next grant.
//
// Errors: lease.ErrInvalid for a zero floor or one above token.Max, an
// *UnavailableError, ErrClosed, or ctx's error.
func (s *Store) RaiseFloor(ctx context.Context, floor token.Token) (token.Token, int64, error) {
	if err := storekit.ValidateToken(floor); err != nil {
		return 0, 0, fmt.Errorf("etcd: raise floor: %w", err)
	}
	if s.closed() {
		return 0, 0, ErrClosed
	}
	for {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, s.keys.floor())
		cancel()
		if err != nil {
			return 0, 0, failed(ctx, "raise floor", s.cfg.prefix, false, err)
		}
		var kv *mvccpb.KeyValue
		if len(resp.Kvs) > 0 {
			kv = resp.Kvs[0]
		}
		f, err := decodeFloor(kv)
		if err != nil {
			return 0, 0, err
		}
		if f.Floor >= int64(floor) {
			return token.Token(f.Floor), f.Offset, nil
		}
		// The put commits at a revision above resp's: every grant after it
		// has a revision r > resp's, so a token r + offset > floor.
		next := floorRecord{Floor: int64(floor), Offset: max(f.Offset, int64(floor)-resp.Header.Revision)}
		b, _ := json.Marshal(next)
		rctx, cancel = s.rpc(ctx)
		tr, err := s.client.Txn(rctx).If(s.floorUnchanged(f)).Then(clientv3.OpPut(s.keys.floor(), string(b))).Commit()
		cancel()
		if err != nil {
			return 0, 0, failed(ctx, "raise floor", s.cfg.prefix, true, err)
		}
		if tr.Succeeded {
			_, _ = s.sawFloor(&mvccpb.KeyValue{Key: []byte(s.keys.floor()), Value: b, ModRevision: tr.Header.Revision})
			return floor, next.Offset, nil
		}
	}
}
