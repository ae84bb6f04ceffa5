package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/picketlock/picket/lease"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// quota bounds what a prefix holds in the cluster (WithMaxLeases,
// WithMaxKVKeys, WithMaxKVBytes), as storage/sqlite's options of the same
// names bound a file: a zero field means no bound; a write over a bound
// fails with an error matching lease.ErrQuota and writes nothing.
type quota struct {
	MaxLeases  int
	MaxKVKeys  int
	MaxKVBytes int64
}

// WithMaxLeases bounds the lease keys: an acquire of a name that has no
// lease key is refused with an error matching lease.ErrQuota while the
// prefix holds n of them (a holder's re-acquire, a renew, a release and an
// acquire of a held name always pass). The count is read just before the
// grant, not inside its transaction, so grants in flight at the same moment
// through several stores can each pass it: the bound can be overrun by as
// many acquires as run at once, never more. A lease key of an expired lease
// counts until it is gone. Zero, the default, means no bound; negative is
// lease.ErrInvalid from Open.
func WithMaxLeases(n int) Option { return func(c *config) { c.quota.MaxLeases = n } }

// WithMaxKVKeys bounds the fenced keys (a deleted one keeps its highest
// token and still counts). It is exact: a fenced write compares the usage
// key (<prefix>/kvusage), which it rewrites in its own transaction. Zero,
// the default, means no bound; negative is lease.ErrInvalid from Open.
func WithMaxKVKeys(n int) Option { return func(c *config) { c.quota.MaxKVKeys = n } }

// WithMaxKVBytes bounds the bytes of the fenced keys' names and values,
// exactly as WithMaxKVKeys. Zero, the default, means no bound; negative is
// lease.ErrInvalid from Open.
func WithMaxKVBytes(n int64) Option { return func(c *config) { c.quota.MaxKVBytes = n } }

func (q quota) validate() error {
	if q.MaxLeases < 0 || q.MaxKVKeys < 0 || q.MaxKVBytes < 0 {
		return invalidf("quota %+v has a negative bound", q)
	}
	return nil
}

func (q quota) kv() bool { return q.MaxKVKeys > 0 || q.MaxKVBytes > 0 }

// leaseQuota refuses an acquire of name while the prefix holds
// MaxLeases lease keys and none of them is name's.
func (s *Store) leaseQuota(ctx context.Context, name string) error {
	max := s.cfg.quota.MaxLeases
	if max <= 0 {
		return nil
	}
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Txn(rctx).Then(
		clientv3.OpGet(s.keys.leases(), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(s.keys.lease(name), clientv3.WithCountOnly()),
	).Commit()
	cancel()
	if err != nil {
		return failed(ctx, "acquire", name, false, err)
	}
	live := resp.Responses[0].GetResponseRange().Count
	if live >= int64(max) && resp.Responses[1].GetResponseRange().Count == 0 {
		return fmt.Errorf("etcd: acquire %q: %w: %d leases, the most this store keeps", name, lease.ErrQuota, max)
	}
	return nil
}

// kvUsage is the usage key's value: what the fenced keys hold.
type kvUsage struct {
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
}

// kvSize is what a fenced key of name with a stored value v counts for.
func kvSize(name string, stored []byte) int64 {
	return int64(len(name) + len(stored) - tokenDigits - 1)
}

// usageState is the usage as of the usage key's mod revision (rev; 0: no
// key), valid only if no fenced key changed after it.
type usageState struct {
	kvUsage
	rev int64
}

// readUsage returns the fenced keys' usage: from the usage key when no
// fenced key changed after it was written (every write under a KV quota
// rewrites it in the same transaction), else counted afresh from the keys
// and written back.
func (s *Store) readUsage(ctx context.Context) (usageState, error) {
	for {
		uk := s.keys.kvUsage()
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Txn(rctx).Then(
			clientv3.OpGet(uk),
			clientv3.OpGet(s.keys.kv(""), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend),
				clientv3.WithLimit(1), clientv3.WithKeysOnly()),
		).Commit()
		cancel()
		if err != nil {
			return usageState{}, failed(ctx, "read the fenced keys' usage", s.cfg.prefix, false, err)
		}
		var latest int64
		if kv := firstKV(resp.Responses[1]); kv != nil {
			latest = kv.ModRevision
		}
		if kv := firstKV(resp.Responses[0]); kv != nil && kv.ModRevision >= latest {
			var u usageState
			if err := json.Unmarshal(kv.Value, &u.kvUsage); err == nil {
				u.rev = kv.ModRevision
				return u, nil
			}
		}
		if latest == 0 && firstKV(resp.Responses[0]) == nil {
			return usageState{}, nil // no fenced key, no usage key
		}
		// Count afresh, and write it back if nothing changed meanwhile.
		rctx, cancel = s.rpc(ctx)
		all, err := s.client.Get(rctx, s.keys.kv(""), clientv3.WithPrefix())
		cancel()
		if err != nil {
			return usageState{}, failed(ctx, "read the fenced keys' usage", s.cfg.prefix, false, err)
		}
		var u kvUsage
		for _, kv := range all.Kvs {
			u.Keys++
			u.Bytes += kvSize(string(kv.Key[len(s.keys.kv("")):]), kv.Value)
		}
		b, _ := json.Marshal(u)
		rctx, cancel = s.rpc(ctx)
		_, err = s.client.Txn(rctx).If(
			clientv3.Compare(clientv3.ModRevision(s.keys.kv("")), "<", all.Header.Revision+1).WithPrefix(),
		).Then(clientv3.OpPut(uk, string(b))).Commit()
		cancel()
		if err != nil {
			return usageState{}, failed(ctx, "write the fenced keys' usage", s.cfg.prefix, true, err)
		}
	}
}

// kvQuota checks a write of stored (the whole encoded value) to key, whose
// current etcd key is cur (nil: none), against the KV quota. It returns the
// comparisons and the write of the usage key to add to the write's
// transaction, or an error matching lease.ErrQuota. Without a KV quota it
// returns nothing.
func (s *Store) kvQuota(ctx context.Context, op, key string, cur *mvccpb.KeyValue, stored string) ([]clientv3.Cmp, []clientv3.Op, error) {
	q := s.cfg.quota
	if !q.kv() {
		return nil, nil, nil
	}
	u, err := s.readUsage(ctx)
	if err != nil {
		return nil, nil, err
	}
	d := kvUsage{Keys: 1, Bytes: kvSize(key, []byte(stored))}
	if cur != nil {
		d = kvUsage{Bytes: kvSize(key, []byte(stored)) - kvSize(key, cur.Value)}
	}
	if (d.Keys > 0 && q.MaxKVKeys > 0 && u.Keys+d.Keys > int64(q.MaxKVKeys)) ||
		(d.Bytes > 0 && q.MaxKVBytes > 0 && u.Bytes+d.Bytes > q.MaxKVBytes) {
		return nil, nil, fmt.Errorf("etcd: %s %q: %w: the fenced keys hold %d keys and %d bytes; the quota is %d keys, %d bytes",
			op, key, lease.ErrQuota, u.Keys, u.Bytes, q.MaxKVKeys, q.MaxKVBytes)
	}
	next := kvUsage{Keys: u.Keys + d.Keys, Bytes: u.Bytes + d.Bytes}
	b, _ := json.Marshal(next)
	k := s.keys.kv(key)
	curRev := int64(0)
	if cur != nil {
		curRev = cur.ModRevision
	}
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(s.keys.kvUsage()), "=", u.rev),
		clientv3.Compare(clientv3.ModRevision(k), "=", curRev), // the delta counted is the one written
	}
	return cmps, []clientv3.Op{clientv3.OpPut(s.keys.kvUsage(), string(b))}, nil
}

// Stats counts the lease keys of the prefix (lease.Stats.Live; a lease key
// of an expired lease counts until it is gone). The age of the oldest lease
// is not known on etcd, nor is a write-ahead log measured: Oldest and WAL
// are -1.
func (s *Store) Stats(ctx context.Context) (lease.Stats, error) {
	if s.closed() {
		return lease.Stats{}, ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	resp, err := s.client.Get(rctx, s.keys.leases(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return lease.Stats{}, failed(ctx, "stats", s.cfg.prefix, false, err)
	}
	return lease.Stats{Live: resp.Count, Oldest: -1, WAL: -1}, nil
}
