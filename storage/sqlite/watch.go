package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Watching (lease.Watcher), in this process and across processes on the
// file, with no polling and no write per watcher.
//
// The state of a name is read from the leases row (held while its deadline
// is ahead on the store's clock) and, once the row is gone, from the ended
// table (ended.go): a free name keeps the token that last ended on it since
// the name was first watched (its mark). Rev is the lease's
// deadline on the store's clock. A free state's Reason is "revoked" when
// the revoked table names the lease that ended (revoke.go), else "released"
// when its lease was gone before its deadline (the read sees the deadline still
// ahead), "expired" otherwise: a read long after a release near its
// deadline may call it expired.
//
// Wake-ups. A watch waits on a channel of its name (the Store's watchHub),
// closed by:
//   - a batch of any Store of this process on the file that changed the
//     name (watchCommitted, called by the writer after each commit): the
//     process's Stores share one descriptor, so they learn of each other's
//     watches from watchFiles, not from the kernel;
//   - a datagram from a writer in another process (watch_linux.go): a
//     watching Store binds an abstract Unix socket named after a random
//     slot and read-locks, for each name hash it watches, the byte of the
//     database file that encodes (hash, slot), plus a guard byte. A writer
//     that committed a change asks the kernel whether the guard is locked
//     (one fcntl per batch when nobody watches) and then which bytes of
//     the changed name's hash are locked, and rings those slots. The
//     kernel drops the locks when a process dies; an idle watcher costs
//     a blocked read and nothing else.
//
// Expiry writes nothing, so a watch of a held name also times the deadline
// (a timer for the time left on the store's clock; and, on a clock that
// jumps, its Moved channel).
//
// The order that makes a change between the read and the wait impossible
// to miss: the watch registers (channel, lock bytes) before it reads; a
// writer commits before it looks for watchers. Either the watch's read
// sees the commit, or the writer sees the watch.

// watchHub is a Store's watches: a channel per watched name, closed at the
// name's next wake, and how many watches each name hash has (its lock
// byte is held while any does).
type watchHub struct {
	mu     sync.Mutex
	names  map[string]*nameWatch
	hashes map[uint32]int
	net    watchNet // the socket and its goroutine (watch_linux.go)

	// live is held shared by every Watch that has joined (its lock bytes
	// taken); Close takes it once to wait for them to leave before the
	// file's descriptor, which holds those bytes, is closed.
	live sync.RWMutex
}

type nameWatch struct {
	ch chan struct{}
	n  int
}

// watchFiles is, per database file (watchKey), the Stores of this process
// that have watches, and how many watches the file has in all (its guard
// byte is held while any does).
var watchFiles = struct {
	sync.Mutex
	m map[any]*watchFile
}{m: map[any]*watchFile{}}

type watchFile struct {
	stores map[*Store]int
	n      int
}

var _ lease.Watcher = (*Store)(nil)

// Watch returns the state of name as soon as it is not Same as after (see
// lease.Watcher): woken by a change committed by any process on the file,
// or by the lease's deadline on the store's clock.
//
// Errors: lease.ErrInvalid, ErrClosed, lease.ErrUnavailable (a read that
// stayed busy), or ctx's error.
func (s *Store) Watch(ctx context.Context, name string, after lease.State) (lease.State, error) {
	if err := storekit.ValidateWatch(name, after); err != nil {
		return lease.State{}, fmt.Errorf("sqlite: watch: %w", err)
	}
	if after.Name == "" {
		st, _, _, err := s.readState(ctx, name)
		if err != nil {
			return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, err)
		}
		return st, nil
	}
	s.watch.live.RLock()
	defer s.watch.live.RUnlock()
	select {
	case <-s.closing: // Close has waited for the watches already: this one must not take a byte
		return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, ErrClosed)
	default:
	}
	nw, err := s.watchJoin(name)
	if err != nil {
		return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, err)
	}
	defer s.watchLeave(name)
	for {
		if err := ctx.Err(); err != nil {
			return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, err)
		}
		var moved <-chan struct{}
		if mc, ok := s.clock.(lease.MovingClock); ok {
			moved = mc.Moved() // before the clock is read: no move is missed
		}
		s.watch.mu.Lock()
		ch := nw.ch // before the read: a wake after it closes this one
		s.watch.mu.Unlock()
		st, deadline, now, err := s.readState(ctx, name)
		if err != nil {
			return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, err)
		}
		if !st.Same(after) {
			st.Reason = storekit.ChangeReason(after, st)
			return st, nil
		}
		wake := storekit.Wake{Changed: ch, Moved: moved, Poll: s.watch.net.fallback(), Closing: s.closing, Closed: ErrClosed}
		if err := storekit.SleepWatch(ctx, wake, st.Held, deadline-now); err != nil {
			return lease.State{}, fmt.Errorf("sqlite: watch %q: %w", name, err)
		}
	}
}

// readState reads the state of name, with the lease's deadline and the
// clock reading it was judged at.
//
// The first read of a name that nobody has watched marks it (ended.go) and
// reads again: from the mark on, every lease that ends on it leaves its
// token in the ended table.
func (s *Store) readState(ctx context.Context, name string) (lease.State, time.Duration, time.Duration, error) {
	marked := false
	for try := 0; ; try++ {
		now, wall, err := s.readClock(ctx)
		if err != nil {
			return lease.State{}, 0, 0, err
		}
		var stored string
		var owner sql.NullString
		var tok, ttlMS, exp, endTok, endExp, revTok sql.NullInt64
		err = s.read(ctx, "watch", func() error {
			return s.rdb.QueryRowContext(ctx, `SELECT m.value, l.owner, l.token, l.ttl_ms, l.expires_at, e.token, e.expires_at, r.token
				FROM meta m LEFT JOIN leases l ON l.name = ?1 LEFT JOIN ended e ON e.name = ?1
				LEFT JOIN revoked r ON r.name = ?1 AND r.token = e.token
				WHERE m.key = 'epoch'`, name).Scan(&stored, &owner, &tok, &ttlMS, &exp, &endTok, &endExp, &revTok)
		})
		if err != nil {
			return lease.State{}, 0, 0, err
		}
		if again, err := s.otherEpoch(ctx, stored, try); again || err != nil {
			if err != nil {
				return lease.State{}, 0, 0, err
			}
			continue
		}
		if !endTok.Valid && !marked { // not marked yet (ended.go)
			if err := s.markWatched(ctx, name); err != nil {
				return lease.State{}, 0, 0, err
			}
			marked = true
			continue
		}
		st := lease.State{Info: lease.Info{Name: name}}
		switch {
		case owner.Valid && time.Duration(exp.Int64) > now:
			deadline := time.Duration(exp.Int64)
			st.Held, st.Rev = true, uint64(exp.Int64)
			st.Owner, st.Token = owner.String, token.Token(tok.Int64)
			st.TTL = time.Duration(ttlMS.Int64) * time.Millisecond
			st.Expires = wall.Add(deadline - now).UTC()
			return st, deadline, now, nil
		case owner.Valid: // expired, perhaps in its lock-delay
			st.Token, st.Reason = token.Token(tok.Int64), lease.ReasonExpired
		case endTok.Int64 != 0: // 0: marked, no lease ended since
			st.Token, st.Reason = token.Token(endTok.Int64), lease.ReasonExpired
			switch {
			case revTok.Valid: // the lease that ended was revoked (revoke.go)
				st.Reason = lease.ReasonRevoked
			case time.Duration(endExp.Int64) > now:
				st.Reason = lease.ReasonReleased
			}
		}
		return st, 0, now, nil
	}
}

// watchJoin registers a watch of name: its channel, and the lock bytes that
// tell writers in other processes to ring this Store.
func (s *Store) watchJoin(name string) (*nameWatch, error) {
	h := &s.watch
	watchFiles.Lock()
	defer watchFiles.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := s.watchNetUp(); err != nil {
		return nil, err
	}
	key := s.watchKey()
	f := watchFiles.m[key]
	if f == nil {
		f = &watchFile{stores: map[*Store]int{}}
		watchFiles.m[key] = f
	}
	if f.n == 0 {
		s.holdWatchGuard()
	}
	f.n++
	f.stores[s]++
	hash := nameHash(name)
	if h.hashes == nil {
		h.hashes, h.names = map[uint32]int{}, map[string]*nameWatch{}
	}
	if h.hashes[hash] == 0 {
		s.holdWatchByte(hash)
	}
	h.hashes[hash]++
	nw := h.names[name]
	if nw == nil {
		nw = &nameWatch{ch: make(chan struct{})}
		h.names[name] = nw
	}
	nw.n++
	return nw, nil
}

// watchLeave undoes watchJoin.
func (s *Store) watchLeave(name string) {
	h := &s.watch
	watchFiles.Lock()
	defer watchFiles.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if nw := h.names[name]; nw != nil {
		if nw.n--; nw.n == 0 {
			delete(h.names, name)
		}
	}
	hash := nameHash(name)
	if h.hashes[hash]--; h.hashes[hash] == 0 {
		delete(h.hashes, hash)
		s.dropWatchByte(hash)
	}
	key := s.watchKey()
	if f := watchFiles.m[key]; f != nil {
		if f.stores[s]--; f.stores[s] == 0 {
			delete(f.stores, s)
		}
		if f.n--; f.n == 0 {
			s.dropWatchGuard()
			delete(watchFiles.m, key)
		}
	}
}

// wake wakes the watches of name in this Store.
func (h *watchHub) wake(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if nw := h.names[name]; nw != nil {
		close(nw.ch)
		nw.ch = make(chan struct{})
	}
}

// wakeAll wakes every watch of this Store (a ring whose name was lost).
func (h *watchHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, nw := range h.names {
		close(nw.ch)
		nw.ch = make(chan struct{})
	}
}

// watchCommitted is called by the writer after a batch committed: it wakes
// the watches of the names the batch may have changed, in this process
// and in the others on the file. When nobody watches the file it costs the
// grant path one map lookup and one fcntl (the guard byte), and nothing is
// gathered.
func (s *Store) watchCommitted(ops []*op) {
	local := s.localWatchers()
	others := s.othersWatch() // watch_linux.go
	if len(local) == 0 && !others {
		return
	}
	var names []string
	for _, o := range ops {
		switch o.kind {
		case opAcquire, opRenew, opRelease, opWait, opLapse, opRevoke:
			names = append(names, o.name)
		}
	}
	for _, st := range local {
		for _, n := range names {
			st.watch.wake(n)
		}
	}
	if others && len(names) > 0 {
		s.ringWatchers(names) // watch_linux.go
	}
}

// localWatchers returns the Stores of this process that watch this file.
func (s *Store) localWatchers() []*Store {
	watchFiles.Lock()
	defer watchFiles.Unlock()
	f := watchFiles.m[s.watchKey()]
	if f == nil {
		return nil
	}
	local := make([]*Store, 0, len(f.stores))
	for st := range f.stores {
		local = append(local, st)
	}
	return local
}

// nameHash is the 20-bit hash of a name that picks its lock bytes.
func nameHash(name string) uint32 {
	f := fnv.New32a()
	f.Write([]byte(name))
	return f.Sum32() & (1<<watchHashBits - 1)
}

const watchHashBits = 20
