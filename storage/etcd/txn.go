package etcd

import (
	"context"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// The grant path's transactions (an acquire, a release, a renewal, an
// observer's expiry) are built as etcd's wire messages and sent through the
// client's connection, not through clientv3's Txn builder. The builder
// copies every comparison with proto.Clone (a reflective deep copy) two or
// three times (clientv3.Compare, WithPrefix, If): a cycle's six comparisons
// cost the client more CPU than all the rest of picket's own code in it
// (docs/performance.md, "picket on etcd: the client's share"). The messages
// and the call are the ones the builder makes; only the copies go.

// txn is one transaction: If(cmps) Then(then) Else(els).
type txn struct {
	cmps []*pb.Compare
	then []*pb.RequestOp
	els  []*pb.RequestOp
}

// commit sends t as clientv3's Txn().Commit() would: through the client's
// connection and interceptors (auth, leader requirement), with its default
// call options, errors translated as it translates them.
func (s *Store) commit(ctx context.Context, t txn) (*clientv3.TxnResponse, error) {
	resp, err := s.kv.Txn(ctx, &pb.TxnRequest{Compare: t.cmps, Success: t.then, Failure: t.els}, txnCallOpts...)
	if err != nil {
		return nil, clientv3.ContextError(ctx, err)
	}
	return (*clientv3.TxnResponse)(resp), nil
}

// txnCallOpts are clientv3's default call options (picket never changes
// the client's message sizes).
var txnCallOpts = []grpc.CallOption{grpc.WaitForReady(true), grpc.MaxCallSendMsgSize(2 << 20), grpc.MaxCallRecvMsgSize(math.MaxInt32)}

// The comparisons. r is one of pb.Compare_EQUAL, _GREATER, _LESS,
// _NOT_EQUAL.

func cmpCreate(key string, r pb.Compare_CompareResult, rev int64) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_CREATE, Result: r, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: rev}}
}

func cmpMod(key string, r pb.Compare_CompareResult, rev int64) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_MOD, Result: r, TargetUnion: &pb.Compare_ModRevision{ModRevision: rev}}
}

func cmpValue(key string, r pb.Compare_CompareResult, v string) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_VALUE, Result: r, TargetUnion: &pb.Compare_Value{Value: []byte(v)}}
}

// overPrefix makes c compare every key that starts with its key.
func overPrefix(c *pb.Compare) *pb.Compare {
	c.RangeEnd = []byte(clientv3.GetPrefixRangeEnd(string(c.Key)))
	return c
}

// The operations.

func opPut(key, value string) *pb.RequestOp { return opPutOn(key, value, clientv3.NoLease) }

// opPutOn puts key on the etcd lease id.
func opPutOn(key, value string, id clientv3.LeaseID) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value), Lease: int64(id)}}}
}

func opDelete(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(key)}}}
}

// opDeletePrefix deletes every key that starts with prefix.
func opDeletePrefix(prefix string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{
		Key: []byte(prefix), RangeEnd: []byte(clientv3.GetPrefixRangeEnd(prefix))}}}
}

func opGet(key string) *pb.RequestOp { return opRange(&pb.RangeRequest{Key: []byte(key)}) }

func opRange(r *pb.RangeRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r}}
}

// queueRange reads the first key of the queue prefix qp in create-revision
// order (order), of those created before maxCreate (0: any).
func queueRange(qp string, order pb.RangeRequest_SortOrder, maxCreate int64) *pb.RequestOp {
	return opRange(&pb.RangeRequest{Key: []byte(qp), RangeEnd: []byte(clientv3.GetPrefixRangeEnd(qp)), Limit: 1,
		SortOrder: order, SortTarget: pb.RangeRequest_CREATE, MaxCreateRevision: maxCreate})
}
