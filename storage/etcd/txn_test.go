package etcd_test

import (
	"context"
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/picketlock/picket/storage/etcd"
)

// sentTxn is a pb.KVClient that keeps the one transaction sent to it, with
// its call options, and answers it with an empty response.
type sentTxn struct {
	pb.KVClient // every other method: nil, never called
	req         *pb.TxnRequest
	opts        []grpc.CallOption
}

func (k *sentTxn) Txn(_ context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	k.req, k.opts = req, opts
	return &pb.TxnResponse{Header: &pb.ResponseHeader{}}, nil
}

// TestTxnAsClientv3: the grant path builds etcd's wire messages itself
// (txn.go) instead of going through clientv3's Txn builder, which deep-copies
// every comparison. Each builder's message, and the call, must be exactly
// the builder's: the same TxnRequest (proto.Equal) and the same call
// options, for every comparison and operation picket sends. An etcd client
// upgrade that changes what clientv3 sends is caught here.
func TestTxnAsClientv3(t *testing.T) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}}) // never dialled: the KV below is a fake
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sortedQueue := func(order clientv3.SortOrder, maxCreate int64) clientv3.Op {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithSort(clientv3.SortByCreateRevision, order)}
		if maxCreate > 0 {
			opts = append(opts, clientv3.WithMaxCreateRev(maxCreate))
		}
		return clientv3.OpGet("q/", opts...)
	}
	for _, tc := range []struct {
		name      string
		cmps      []*pb.Compare
		then, els []*pb.RequestOp
		theirs    func(clientv3.Txn) clientv3.Txn
	}{
		{
			name: "acquire",
			cmps: []*pb.Compare{etcd.CmpCreate("k", pb.Compare_EQUAL, 0), etcd.CmpMod("f", pb.Compare_LESS, 9)},
			then: []*pb.RequestOp{etcd.OpPutOn("k", "v", 7), etcd.OpPut("f", "10")},
			els:  []*pb.RequestOp{etcd.OpGet("k"), etcd.QueueRange("q/", pb.RangeRequest_ASCEND, 0)},
			theirs: func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.CreateRevision("k"), "=", 0), clientv3.Compare(clientv3.ModRevision("f"), "<", 9)).
					Then(clientv3.OpPut("k", "v", clientv3.WithLease(7)), clientv3.OpPut("f", "10")).
					Else(clientv3.OpGet("k"), sortedQueue(clientv3.SortAscend, 0))
			},
		},
		{
			name: "queue",
			cmps: []*pb.Compare{etcd.OverPrefix(etcd.CmpCreate("q/", pb.Compare_GREATER, 0)), etcd.CmpValue("o", pb.Compare_NOT_EQUAL, "x")},
			then: []*pb.RequestOp{etcd.QueueRange("q/", pb.RangeRequest_DESCEND, 41), etcd.OpPutOn("q/1", "owner", 3)},
			els:  []*pb.RequestOp{etcd.QueueRange("q/", pb.RangeRequest_DESCEND, 0)},
			theirs: func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.CreateRevision("q/"), ">", 0).WithPrefix(), clientv3.Compare(clientv3.Value("o"), "!=", "x")).
					Then(sortedQueue(clientv3.SortDescend, 41), clientv3.OpPut("q/1", "owner", clientv3.WithLease(3))).
					Else(sortedQueue(clientv3.SortDescend, 0))
			},
		},
		{
			name: "release",
			cmps: []*pb.Compare{etcd.CmpMod("k", pb.Compare_EQUAL, 12), etcd.CmpValue("k", pb.Compare_EQUAL, "v")},
			then: []*pb.RequestOp{etcd.OpDelete("k"), etcd.OpDeletePrefix("w/k/")},
			theirs: func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.ModRevision("k"), "=", 12), clientv3.Compare(clientv3.Value("k"), "=", "v")).
					Then(clientv3.OpDelete("k"), clientv3.OpDelete("w/k/", clientv3.WithPrefix()))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ours, theirs sentTxn
			if err := etcd.CommitOn(&ours, tc.cmps, tc.then, tc.els); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.theirs(clientv3.NewKVFromKVClient(&theirs, c).Txn(t.Context())).Commit(); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(ours.req, theirs.req) {
				t.Errorf("picket sends\n%v\nclientv3 sends\n%v", ours.req, theirs.req)
			}
			if !reflect.DeepEqual(ours.opts, theirs.opts) {
				t.Errorf("call options: picket %#v, clientv3 %#v", ours.opts, theirs.opts)
			}
		})
	}
}
