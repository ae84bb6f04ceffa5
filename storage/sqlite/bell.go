package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"time"
)

// The bell: how one process wakes another that waits on the same file, and
// how it learns that the other is still alive, with no write and no timer.
//
// A Store that waits (or, later, watches) takes a name in the file, its id:
// 96 random bits, written in the rows it queues (waiters.process). From the
// id follow two things the kernel keeps for it:
//
//   - its liveness byte: a read lock (an open file description lock,
//     F_OFD_SETLK) on byte liveBase + id mod 2^60 of the database file, far
//     above the bytes SQLite locks and apart from the one-WAL proof's
//     (inode.go). The kernel drops it when the process dies, however it
//     dies. Whoever serves the queue asks (F_OFD_GETLK) whether the byte of
//     a row's process is still locked: no lock, no process, and the row is
//     skipped and deleted. Stores of this process share one descriptor of
//     the file, which never sees its own locks: they are known from
//     localStores instead.
//   - its bell: an abstract Unix datagram socket named "picket/" + id. The
//     writer that grants a row of another process rings that process's
//     bell after the commit, with the row's seq; the process wakes that one
//     call and no other. Abstract sockets live in a network namespace: a
//     waiter in another one is not reached, and finds its grant by the
//     fallback check below.
//
// Every bellTick, while a call of this process has a row, the bell's
// goroutine reads (a read transaction, no write) the rows of this process
// that were granted or whose name is free, and wakes their calls: a lost
// datagram, a waiter in another network namespace, or a granter that died
// before a grant it made lapsed cost at most that long. Elsewhere than
// Linux there is no bell and no liveness byte: the fallback check is the
// only wake-up, and every row counts as live (a grant to a dead process
// lapses after claimWindow).
//
// A message is a topic byte and its payload; bellGrant carries the seq of
// the row that was granted. Other topics (a watched name that changed) can
// be added beside it.

const (
	bellTick  = time.Second
	bellGrant = 'g' // payload: the seq of the granted row, 8 bytes big-endian
)

// localStores is the set of the ids of this process's armed Stores, whose
// liveness bytes the process's own descriptor cannot see.
var localStores = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// bell is a Store's end: its id (given at Open), its liveness byte and
// socket (taken when a call first waits, kept until Close), and the
// goroutine that reads the socket while calls of this Store wait.
type bell struct {
	id      string
	mu      sync.Mutex
	armed   bool     // the liveness byte and the socket were taken
	closed  bool     // the Store is closing: never arm again
	conn    bellConn // nil where there is none
	running bool     // the goroutine runs
	done    chan struct{}
	stop    chan struct{} // closed by unarm
}

// newProcessID names a Store in the file.
func newProcessID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	return hex.EncodeToString(b[:])
}

// armAndPark parks p, a waiting call's op (hub.go), with the bell armed:
// the Store's liveness byte and socket taken, once (one that cannot be had
// is logged; the fallback check still finds every grant), and the
// goroutine running.
func (s *Store) armAndPark(p *op) {
	b := &s.bell
	b.mu.Lock()
	defer b.mu.Unlock()
	s.waiters.park(p)
	if b.closed {
		return
	}
	if !b.armed {
		b.armed = true
		b.stop = make(chan struct{})
		localStores.Lock()
		localStores.m[b.id] = true
		localStores.Unlock()
		if err := s.holdLive(b.id); err != nil {
			s.logger.Log("msg", "no liveness byte: this Store's waiters count as live until a grant to them lapses", "err", err)
		}
		var err error
		if b.conn, err = listenBell(b.id); err != nil {
			s.logger.Log("msg", "no bell: waiters here find their grants by a check every second", "err", err)
		}
	}
	if !b.running {
		b.running, b.done = true, make(chan struct{})
		go s.bellLoop(b.done)
	}
}

// idle ends the goroutine (true) if no call of this Store waits.
func (b *bell) idle(h *hub) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.parked() > 0 {
		return false
	}
	b.running = false
	return true
}

// unarm stops the goroutine, closes the socket and drops the liveness
// byte; the writer goroutine calls it as it returns, before the file's
// descriptor closes.
func (s *Store) unarm() {
	b := &s.bell
	b.mu.Lock()
	b.closed = true
	armed, done := b.armed, b.done
	if b.running {
		close(b.stop)
	}
	if b.conn != nil {
		b.conn.Close()
	}
	b.mu.Unlock()
	if !armed {
		return
	}
	if done != nil {
		<-done
	}
	s.dropLive(b.id)
	localStores.Lock()
	delete(localStores.m, b.id)
	localStores.Unlock()
}

// bellLoop wakes the calls whose rows a message names, makes the fallback
// check every bellTick, and returns once no call waits.
func (s *Store) bellLoop(done chan struct{}) {
	defer close(done)
	b := &s.bell
	buf := make([]byte, 64)
	last := time.Now()
	for {
		if b.conn != nil {
			_ = b.conn.SetReadDeadline(last.Add(bellTick))
			n, err := b.conn.Read(buf)
			switch {
			case err == nil:
				if n == 9 && buf[0] == bellGrant {
					s.waiters.wake(int64(binary.BigEndian.Uint64(buf[1:9])))
				}
				if time.Since(last) < bellTick {
					continue
				}
			case !errors.Is(err, os.ErrDeadlineExceeded):
				return // closed by unarm
			}
		} else {
			select {
			case <-time.After(time.Until(last.Add(bellTick))):
			case <-b.stop:
				return
			}
		}
		last = time.Now()
		if s.waiters.queued() {
			s.checkRows()
		}
		if b.idle(&s.waiters) {
			return
		}
	}
}

// checkRows is the fallback check: it wakes the calls of this process
// whose rows were granted, whose names are free or held by a grant to
// another waiter that lapsed, or whose rows are gone.
func (s *Store) checkRows() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := s.clock.Now()
	rows, err := s.rdb.QueryContext(ctx, `SELECT w.seq,
			w.token > 0 OR l.name IS NULL OR l.expires_at + l.lock_delay_ms * 1000000 <= ?1
			OR (l.granted_at <= ?2 AND EXISTS (SELECT 1 FROM waiters g WHERE g.name = l.name AND g.token = l.token))
		FROM waiters w LEFT JOIN leases l ON l.name = w.name WHERE w.process = ?3`,
		int64(now), int64(now-claimWindow), s.bell.id)
	if err != nil {
		return // the next tick tries again
	}
	defer rows.Close()
	found := map[int64]bool{}
	for rows.Next() {
		var seq int64
		var look bool
		if rows.Scan(&seq, &look) != nil {
			return
		}
		found[seq] = true
		if look {
			s.waiters.wake(seq)
		}
	}
	if rows.Err() != nil {
		return
	}
	s.waiters.wakeMissing(found)
}

// ringMessage is the message that tells a process its row seq was granted.
func ringMessage(seq int64) []byte {
	m := make([]byte, 9)
	m[0] = bellGrant
	binary.BigEndian.PutUint64(m[1:], uint64(seq))
	return m
}

// alive reports whether the Store named id may still wait: one of this
// process, or one whose liveness byte is locked. When the kernel cannot
// tell, it counts as alive.
func (s *Store) alive(id string) bool {
	localStores.Lock()
	local := localStores.m[id]
	localStores.Unlock()
	return local || s.liveByteLocked(id)
}

// errNoDescriptor: the Store has no descriptor of the file to lock its
// liveness byte on (systems without open file description locks).
var errNoDescriptor = errors.New("no descriptor of the database file (no open file description locks on this system)")
