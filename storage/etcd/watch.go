package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watching (lease.Watcher) with etcd's watch. A held state's Rev is the
// lease key's mod revision; a free state's is the revision the store read
// it at or saw it begin at. A watch resumes from after.Rev + 1 with
// etcd's watch of the lease key (previous values included), so every
// write to the key since the state the caller knows comes back, in order:
// a grant and its release between two calls are two events, and the
// release's previous value names the token that ended.
//
// Expiry here is by observation (observe.go): nothing writes until some
// store has seen the key unchanged for its TTL. A watch of a held name
// times that on this store's own clock and then ends the lease as Get
// would (one transaction, which other watchers see as an event).
//
// What etcd can only collapse: if the revisions after after.Rev have been
// compacted, the watch answers the current state read anew (Reason empty),
// even when it looks the same: changes in the compacted history cannot be
// told apart from none.
//
// A released key and a key an observer deleted at expiry (no lock-delay)
// are the same delete event; the Reason is "released" when the event comes
// before the lease's deadline as its record renders it, "expired" after. A
// revoke deletes the key in the transaction that writes its revocation
// record: a delete at that record's revision is "revoked".

var _ lease.Watcher = (*Store)(nil)

// Watch returns the state of name as soon as it is not Same as after (see
// lease.Watcher).
//
// Errors: lease.ErrInvalid, an *UnavailableError, ErrClosed, or ctx's
// error.
func (s *Store) Watch(ctx context.Context, name string, after lease.State) (lease.State, error) {
	if err := lease.ValidateWatch(name, after); err != nil {
		return lease.State{}, fmt.Errorf("etcd: watch: %w", err)
	}
	if s.closed() {
		return lease.State{}, ErrClosed
	}
	if after.Name == "" {
		st, _, err := s.readState(ctx, name)
		return st, err
	}
	key := s.keys.lease(name)
	// What the caller knows of a held key, for timing its expiry.
	var kv *mvccpb.KeyValue
	if after.Held {
		st, cur, err := s.readState(ctx, name)
		if err != nil {
			return lease.State{}, err
		}
		if st.Held && st.Rev == after.Rev {
			kv = cur
		}
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := s.client.Watch(wctx, key, clientv3.WithRev(int64(after.Rev)+1), clientv3.WithPrevKV())
	cur := after
	for {
		var expiry <-chan time.Time
		stop := func() bool { return false }
		if cur.Held && kv != nil {
			if _, r, _, _, err := decodeKey(kv.Value); err == nil {
				t := time.NewTimer(r.ttl() - s.seen.see(key, kv.ModRevision, s.bootNow()) + time.Millisecond)
				expiry, stop = t.C, t.Stop
			}
		}
		st, done, err := s.watchStep(ctx, name, after, &cur, &kv, wch, expiry)
		stop()
		if done || err != nil {
			return st, err
		}
	}
}

// watchStep waits for one thing: events (done when the state is no longer
// Same as after), the expiry timer, the store's close or ctx's end.
func (s *Store) watchStep(ctx context.Context, name string, after lease.State, cur *lease.State,
	kv **mvccpb.KeyValue, wch clientv3.WatchChan, expiry <-chan time.Time) (lease.State, bool, error) {
	{
		select {
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return lease.State{}, true, fmt.Errorf("etcd: watch %q: %w", name, err)
				}
				return lease.State{}, true, failed(ctx, "watch", name, false, errors.New("the watch ended"))
			}
			if errors.Is(resp.Err(), rpctypes.ErrCompacted) || resp.CompactRevision != 0 {
				st, _, err := s.readState(ctx, name)
				return st, true, err
			}
			if err := resp.Err(); err != nil {
				return lease.State{}, true, failed(ctx, "watch", name, false, err)
			}
			for _, ev := range resp.Events {
				*cur, *kv = s.applyEvent(name, *cur, ev)
			}
			if !cur.Same(after) {
				st := *cur
				if st.Held {
					st.Reason = lease.ChangeReason(after, st)
				} else if err := s.revokedReason(ctx, &st); err != nil {
					return lease.State{}, true, err
				}
				return st, true, nil
			}
		case <-expiry:
			// Seen unchanged for its TTL: end it as Get does (one
			// transaction, which comes back as an event); a key still
			// live at the same revision keeps being timed.
			st, now, err := s.readState(ctx, name)
			if err != nil {
				return lease.State{}, true, err
			}
			*kv = nil
			if st.Held && st.Rev == cur.Rev {
				*kv = now
			}
		case <-s.closing:
			return lease.State{}, true, ErrClosed
		case <-ctx.Done():
			return lease.State{}, true, fmt.Errorf("etcd: watch %q: %w", name, ctx.Err())
		}
	}
	return lease.State{}, false, nil
}

// applyEvent is the state after ev, a write to name's lease key, given the
// state before it; and the key when it holds a lease.
func (s *Store) applyEvent(name string, cur lease.State, ev *clientv3.Event) (lease.State, *mvccpb.KeyValue) {
	free := lease.State{Info: lease.Info{Name: name, Token: cur.Token}, Rev: uint64(ev.Kv.ModRevision)}
	if ev.PrevKv != nil {
		if tok := keyToken(ev.PrevKv); tok != 0 {
			free.Token = tok
		}
	}
	if ev.Type == mvccpb.DELETE {
		free.Reason = lease.ReasonExpired
		if ev.PrevKv != nil {
			if _, r, expired, _, err := decodeKey(ev.PrevKv.Value); err == nil && !expired && time.Now().UnixNano() < r.Expires {
				free.Reason = lease.ReasonReleased
			}
		}
		return free, nil
	}
	info, _, _, err := leaseInfo(name, ev.Kv)
	if err != nil { // an expired key (its lock-delay runs), or a value picket did not write
		free.Reason = lease.ReasonExpired
		return free, nil
	}
	return lease.State{Info: info, Held: true, Rev: uint64(ev.Kv.ModRevision)}, ev.Kv
}

// readState reads the state of name now, ending a lease this store has
// seen unchanged for its TTL as Get does; and the key when held.
func (s *Store) readState(ctx context.Context, name string) (lease.State, *mvccpb.KeyValue, error) {
	for try := 0; ; try++ {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, s.keys.lease(name))
		cancel()
		if err != nil {
			return lease.State{}, nil, failed(ctx, "watch", name, false, err)
		}
		free := lease.State{Info: lease.Info{Name: name}, Rev: uint64(resp.Header.Revision)}
		if len(resp.Kvs) == 0 {
			return free, nil, nil
		}
		kv := resp.Kvs[0]
		info, _, _, err := leaseInfo(name, kv)
		if err != nil { // an expired key in its lock-delay
			free.Token, free.Reason = tokenOf(kv.CreateRevision, s.floorNow().Offset), lease.ReasonExpired
			return free, nil, nil
		}
		live, err := s.live(ctx, name, kv)
		if err != nil {
			return lease.State{}, nil, err
		}
		if live {
			return lease.State{Info: info, Held: true, Rev: uint64(kv.ModRevision)}, kv, nil
		}
		if try >= 2 { // ended just now, and again: say so without a third look
			free.Token, free.Reason = info.Token, lease.ReasonExpired
			return free, nil, nil
		}
	}
}

// revokedReason sets st.Reason to revoked when st, a free state answered
// after a delete, is the revision at which a revoke deleted the key: Revoke
// writes the name's revocation record in the same transaction. One read,
// and only for a delete that ends a watch.
func (s *Store) revokedReason(ctx context.Context, st *lease.State) error {
	if st.Rev == 0 || st.Token == 0 {
		return nil
	}
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Get(rctx, s.keys.revoked(st.Name), clientv3.WithRev(int64(st.Rev)))
	cancel()
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // the record's revision is gone: keep what the event said
	}
	if err != nil {
		return failed(ctx, "watch", st.Name, false, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != int64(st.Rev) {
		return nil
	}
	var rec revokedRecord
	if json.Unmarshal(resp.Kvs[0].Value, &rec) == nil && token.Token(rec.Token) == st.Token {
		st.Reason = lease.ReasonRevoked
	}
	return nil
}
