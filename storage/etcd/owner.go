package etcd

import (
	"fmt"

	"github.com/picketlock/picket/lease"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// IsOwner returns the comparisons that hold, inside an etcd transaction,
// exactly while g is the lease on its name under the store's prefix: put
// them in the If of a transaction of your own, on your own client to the
// same cluster, and its Then commits only while g's holder still holds the
// name. This is fencing inside etcd itself, as with etcd's
// concurrency.Mutex.IsOwner:
//
//	own, err := store.IsOwner(l.Grant())
//	if err != nil {
//		return err
//	}
//	resp, err := cli.Txn(ctx).If(own...).Then(clientv3.OpPut("billing/state", "42 rows")).Commit()
//	if err == nil && !resp.Succeeded {
//		return lease.ErrLost // the name is no longer g's: write nothing more
//	}
//
// They are the comparisons a release makes: the lease key's create
// revision is the revision of the transaction that granted g (its token
// less the token floor's offset, floor.go), and its value starts with the
// SHA-256 of g's holder secret (two byte-order comparisons, record.go). So
// the transaction fails once the lease was released, revoked, ended by an
// observer (deleted, or rewritten as an expired key while its lock-delay
// runs: that value carries no holder's hash), or taken over, since a grant
// to anyone else creates the key anew at a later revision. A renewal, or the
// same holder's re-acquire, keeps both, so the comparisons hold for the
// whole lease. A holder secret is the holder: another lease granted to the
// same secret (a re-acquire after a release, with the same secret) is owned
// by the same caller.
//
// A lease past its TTL that no store has ended yet is still owned. Expiry
// here is decided by observation (observe.go): a TTL passing only allows a
// store that has seen the key unchanged that long to end the lease, with a
// transaction that changes the key; until then nobody else can be granted
// the name, which every grant requires to have no lease key. So a
// transaction guarded by IsOwner commits at a revision at which no other
// holder has been granted the name, and every grant to another holder
// comes after it in etcd's one order: the writes of two holders never
// interleave, whatever the clocks say (etcd compares no time, and the
// promise needs none). The holder's handle gives up at its local deadline,
// before the TTL; IsOwner is what still stands when a holder missed it (a
// pause, a slow request). It is stronger than a fencing token: a fence
// refuses a stale holder once its successor has written to that resource,
// IsOwner from the moment the key stops being the stale holder's.
//
// The token floor: g's create revision is computed with the offset this
// store knows (the one of its last grant or read of the floor key). After
// RaiseFloor, a grant made before the raise is known to a store that has
// seen the raise by another revision, and a store that has not granted since
// a raise does not know its offset: the comparisons then fail (never the
// other way), and the caller stops as if the lease were lost.
//
// IsOwner sends nothing to the cluster. Errors: lease.ErrInvalid for a
// grant without a valid name, holder or token.
func (s *Store) IsOwner(g lease.Grant) ([]clientv3.Cmp, error) {
	if err := (lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}).Validate(); err != nil {
		return nil, fmt.Errorf("etcd: is owner: %w", err)
	}
	k, h := s.keys.lease(g.Name), holderHash(g.Holder)
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(k), "=", s.revisionOf(g.Token)),
		clientv3.Compare(clientv3.Value(k), ">", h),
		clientv3.Compare(clientv3.Value(k), "<", h+hashEnd),
	}, nil
}
