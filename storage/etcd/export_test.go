package etcd

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/picketlock/picket/lease"
)

// SetClock makes st observe lease keys on c instead of the machine's
// suspend-aware clock.
func SetClock(st *Store, c lease.Clock) { st.boot = c }

// SweepOnce makes st look at the first page of lease keys, as its sweep
// does every few seconds.
func SweepOnce(st *Store) { st.sweepPage("") }

// Client returns the etcd client st uses, for tests that put keys or
// leases beside the store's own (the Store has no such method: a caller
// could close the store's client under it).
func Client(st *Store) *clientv3.Client { return st.client }

// The grant path's transaction builders (txn.go), for TestTxnAsClientv3.
var (
	CmpCreate      = cmpCreate
	CmpMod         = cmpMod
	CmpValue       = cmpValue
	OverPrefix     = overPrefix
	OpPut          = opPut
	OpPutOn        = opPutOn
	OpDelete       = opDelete
	OpDeletePrefix = opDeletePrefix
	OpGet          = opGet
	QueueRange     = queueRange
)

// CommitOn sends the transaction If(cmps) Then(then) Else(els) as a Store
// whose connection is kv sends it.
func CommitOn(kv pb.KVClient, cmps []*pb.Compare, then, els []*pb.RequestOp) error {
	s := &Store{kv: kv}
	_, err := s.commit(context.Background(), txn{cmps: cmps, then: then, els: els})
	return err
}
