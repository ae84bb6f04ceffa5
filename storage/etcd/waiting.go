package etcd

import (
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Bounds of Waiting's reads.
const (
	maxWaitingKeys = 10000 // queue keys read
	waitingBatch   = 100   // lease keys read per transaction (etcd allows 128 operations)
)

// Waiting returns the number of acquires waiting for each name that has
// any, in every store on the prefix: the name's queue keys, less the one of
// the name's holder (a waiter keeps its queue key while it holds the name).
// A dead process's keys count until its session's etcd lease expires. It
// reads up to 10 000 queue keys, and the lease keys of their names, so call
// it for a status page, not per request. (lease.WaitCounter: the status
// page shows it.)
//
// Errors: ErrClosed, or lease.ErrUnavailable when the cluster does not
// answer.
func (s *Store) Waiting(ctx context.Context) (map[string]int, error) {
	if s.closed() {
		return nil, ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	qp := s.keys.prefix + "queue/"
	resp, err := s.client.Get(rctx, qp, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(maxWaitingKeys))
	if err != nil {
		return nil, failed(ctx, "waiting", s.cfg.prefix, false, err)
	}
	hashes := map[string][]string{} // name → the holders' hashes of its queue keys
	var names []string
	for _, kv := range resp.Kvs {
		name, rest, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), qp), "\x00")
		hash, _, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 {
			continue // not a key this package wrote
		}
		if _, seen := hashes[name]; !seen {
			names = append(names, name)
		}
		hashes[name] = append(hashes[name], hash)
	}
	out := make(map[string]int, len(names))
	for len(names) > 0 {
		batch := names[:min(waitingBatch, len(names))]
		names = names[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, name := range batch {
			ops[i] = clientv3.OpGet(s.keys.lease(name))
		}
		tresp, err := s.client.Txn(rctx).Then(ops...).Commit()
		if err != nil {
			return nil, failed(ctx, "waiting", s.cfg.prefix, false, err)
		}
		for i, name := range batch {
			holder := ""
			if kvs := tresp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
				if h, _, expired, _, err := decodeKey(kvs[0].Value); err == nil && !expired {
					holder = h
				}
			}
			n := 0
			for _, h := range hashes[name] {
				if h != holder {
					n++
				}
			}
			if n > 0 {
				out[name] = n
			}
		}
	}
	return out, nil
}
