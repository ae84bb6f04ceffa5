package etcd

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The grant history is kept in keys under the prefix, each written by the
// transaction that makes the change it records (a grant, a release, an
// expiry an observer commits, a revoke, a fenced write refused):
//
//	picket/history/TIME.RAND    one event: TIME is the write's wall clock in
//	                            Unix nanoseconds, 20 digits; RAND 8 hex digits
//
// The event's Seq is the key's create revision, the revision of that
// transaction (one event per transaction), so it rises with every change
// in the cluster; a grant's token is that revision plus the floor's offset,
// so the grant event holds the offset, not the token, which the
// transaction cannot know before it commits. etcd's own history (the
// revisions of the lease keys) is not used: a cluster compacts it (picket
// cannot keep an operator from compacting, and every production cluster
// does), and it would hold the holder's hash, not an event.
//
// Retention (WithHistory): every store's sweep (every 5 s) deletes the
// events older than maxAge in one range delete, and, past maxEvents, the
// oldest in chunks; never on the grant path.

// WithHistory keeps at most maxEvents events of history, none older than
// maxAge (defaults lease.DefaultHistoryMaxEvents and
// lease.DefaultHistoryMaxAge). maxEvents 0 turns the history off; maxAge 0
// keeps events of any age; negative values are lease.ErrInvalid from Open.
func WithHistory(maxEvents int, maxAge time.Duration) Option {
	return func(c *config) { c.historyMax, c.historyAge = maxEvents, maxAge }
}

func (k keys) history() string { return k.prefix + "history/" }

// eventRecord is an event key's value.
type eventRecord struct {
	Time   int64  `json:"t"` // Unix nanoseconds
	Kind   string `json:"k"`
	Name   string `json:"n"`
	Token  int64  `json:"tok,omitempty"` // 0: the key's create revision plus Offset (a grant)
	Offset int64  `json:"f,omitempty"`
	Owner  string `json:"o,omitempty"`
	Reason string `json:"r,omitempty"`
	By     string `json:"b,omitempty"`
}

// event returns the key and value of one event in the history; ok is false
// with the history off. e.Token zero means "this transaction's revision
// plus offset".
func (s *Store) event(e lease.Event, offset int64) (key, value string, ok bool) {
	if s.cfg.historyMax == 0 {
		return "", "", false
	}
	now := time.Now()
	if e.Time.IsZero() {
		e.Time = now
	}
	b, err := json.Marshal(eventRecord{Time: e.Time.UnixNano(), Kind: string(e.Kind), Name: e.Name, Token: int64(e.Token),
		Offset: offset, Owner: e.Owner, Reason: e.Reason, By: e.By})
	if err != nil {
		panic(err) // plain fields: cannot fail
	}
	// TIME.RAND: RAND keeps two events of the same nanosecond apart; it
	// needs to be unlikely to repeat, not unpredictable.
	var r [4]byte
	binary.BigEndian.PutUint32(r[:], rand.Uint32())
	k := hex.AppendEncode(append(s.keys.historyAt(now.UnixNano()), '.'), r[:])
	return string(k), string(b), true
}

// historyAt is the start of the name of an event key written at ns (Unix
// nanoseconds): <prefix>/history/ and ns in 20 digits, so that the keys
// sort by time (History's Since, the prune by age).
func (k keys) historyAt(ns int64) []byte {
	const width = 20
	base := k.history()
	// Room for the event key's ".RAND" too (event: 8 hex digits).
	b := append(make([]byte, 0, len(base)+width+len(".")+8), base...)
	d := strconv.AppendInt(nil, ns, 10)
	for range width - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}

// eventOp is the put of one event for clientv3's Txn builder, or nil with
// the history off.
func (s *Store) eventOp(e lease.Event, offset int64) []clientv3.Op {
	if k, v, ok := s.event(e, offset); ok {
		return []clientv3.Op{clientv3.OpPut(k, v)}
	}
	return nil
}

// eventPut is the put of one event on the wire (txn.go), or nil with the
// history off.
func (s *Store) eventPut(e lease.Event, offset int64) []*pb.RequestOp {
	if k, v, ok := s.event(e, offset); ok {
		return []*pb.RequestOp{opPut(k, v)}
	}
	return nil
}

// decodeEvent reads an event key.
func decodeEvent(kv *mvccpb.KeyValue) (lease.Event, error) {
	var r eventRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return lease.Event{}, fmt.Errorf("etcd: a history value that picket did not write: %w", err)
	}
	tok := token.Token(r.Token)
	if tok == 0 {
		tok = tokenOf(kv.CreateRevision, r.Offset)
	}
	return lease.Event{Seq: uint64(kv.CreateRevision), Time: time.Unix(0, r.Time).UTC(), Kind: lease.EventKind(r.Kind),
		Name: r.Name, Token: tok, Owner: r.Owner, Reason: r.Reason, By: r.By}, nil
}

// historyChunk is how many event keys History reads at once.
const historyChunk = 512

// History returns one page of the history (see lease.HistoryReader): the
// event keys in create-revision order, filtered by name and time here. It
// reads at most a bounded number of chunks per page.
//
// Errors: lease.ErrInvalid, an *UnavailableError, ErrClosed, or ctx's
// error.
func (s *Store) History(ctx context.Context, req lease.HistoryRequest) (lease.HistoryPage, error) {
	if err := req.Validate(); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("etcd: history: %w", err)
	}
	if s.closed() {
		return lease.HistoryPage{}, ErrClosed
	}
	base := s.keys.history()
	from := base
	if !req.Since.IsZero() && req.Since.UnixNano() > 0 {
		// An event's key is named after its write, never before its time.
		from = string(s.keys.historyAt(req.Since.UnixNano()))
	}
	limit := req.PageLimit()
	page := lease.HistoryPage{Events: []lease.Event{}}
	cursor := int64(req.After)
	order := clientv3.SortAscend
	if req.Newest {
		order = clientv3.SortDescend
	}
	for range 1 << 12 {
		opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(base)),
			clientv3.WithSort(clientv3.SortByCreateRevision, order), clientv3.WithLimit(historyChunk)}
		if cursor != 0 && !req.Newest {
			opts = append(opts, clientv3.WithMinCreateRev(cursor+1))
		} else if cursor != 0 {
			opts = append(opts, clientv3.WithMaxCreateRev(cursor-1))
		}
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return lease.HistoryPage{}, failed(ctx, "history", req.Name, false, err)
		}
		for _, kv := range resp.Kvs {
			cursor = kv.CreateRevision
			e, err := decodeEvent(kv)
			if err != nil || !req.Match(e) {
				continue
			}
			if len(page.Events) == limit {
				page.Next = page.Events[limit-1].Seq
				s.fillOwners(ctx, page.Events)
				return page, nil
			}
			page.Events = append(page.Events, e)
		}
		if !resp.More {
			break
		}
	}
	s.fillOwners(ctx, page.Events)
	return page, nil
}

// pruneHistory deletes the events past the retention and the revocations
// older than a day; the sweep calls it. Errors are left for the next sweep.
func (s *Store) pruneHistory(ctx context.Context) {
	base := s.keys.history()
	if age := s.cfg.historyAge; age > 0 {
		cut := string(s.keys.historyAt(time.Now().Add(-age).UnixNano()))
		_, _ = s.client.Delete(ctx, base, clientv3.WithRange(cut))
	}
	if max := int64(s.cfg.historyMax); max > 0 {
		resp, err := s.client.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil && resp.Count > max {
			over := min(resp.Count-max, 4096)
			old, err := s.client.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(over))
			if err == nil && len(old.Kvs) > 0 {
				last := string(old.Kvs[len(old.Kvs)-1].Key)
				_, _ = s.client.Delete(ctx, base, clientv3.WithRange(last+"\x00"))
			}
		}
	}
	s.pruneRevoked(ctx)
}

// fillOwners sets the owner of the release events of page, which a release
// cannot know without a read it does not make (a release is one
// transaction): the owner is the grant's, found in the page or, for at most
// fillReads events, with one read of the grant's event (its create revision
// is the release's token less the floor's offset).
func (s *Store) fillOwners(ctx context.Context, events []lease.Event) {
	owners := map[string]string{}
	key := func(e lease.Event) string { return fmt.Sprintf("%d/%s", e.Token, e.Name) }
	for _, e := range events {
		if e.Kind == lease.EventGrant {
			owners[key(e)] = e.Owner
		}
	}
	reads := 0
	for i, e := range events {
		if e.Kind != lease.EventRelease || e.Owner != "" {
			continue
		}
		if o, ok := owners[key(e)]; ok {
			events[i].Owner = o
			continue
		}
		if reads == fillReads {
			continue
		}
		reads++
		rev := s.revisionOf(e.Token)
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, s.keys.history(), clientv3.WithPrefix(),
			clientv3.WithMinCreateRev(rev), clientv3.WithMaxCreateRev(rev), clientv3.WithLimit(1))
		cancel()
		if err != nil || len(resp.Kvs) == 0 {
			continue
		}
		if g, err := decodeEvent(resp.Kvs[0]); err == nil && g.Kind == lease.EventGrant && g.Name == e.Name {
			events[i].Owner = g.Owner
		}
	}
}

// fillReads bounds the reads of fillOwners per page.
const fillReads = 64
