package sqlite

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The watch bytes (watch.go) live in [2^60, 2^61) of the database file,
// below the liveness bytes (2^61) and far above SQLite's (around 2^30):
//
//	watchBase                          the guard: read-locked by every
//	                                   process that has a watch on the file
//	watchBase + (h+1)<<39 + slot       a process whose socket is slot
//	                                   (39 bits) watches a name of hash h
//	                                   (20 bits)
//
// A watching Store's socket is the abstract Unix datagram socket
// "@picket/w/" + slot in hexadecimal; a slot is taken by binding it (a
// bind that finds it taken tries another), so slots are unique on the
// host's network namespace, whatever file they watch.
//
// Like the waiters' bell, abstract sockets live in a network namespace: a
// watcher in another one is not reached. Such a watcher learns of changes
// only from its own deadline timers; run watchers and writers in one
// network namespace (or watch over HTTP).
const (
	watchBase     int64 = 1 << 60
	watchSlotBits       = 39
	// watchRingMax bounds the watchers one ring looks for under one hash.
	watchRingMax = 1 << 16
)

const (
	watchTopicName = 'n' // payload: the name that changed
	watchTopicAll  = 'a' // no payload: look at every watched name (a ring that was refused)
)

// watchNet is a watching Store's socket and slot.
type watchNet struct {
	conn *net.UnixConn
	slot uint64
	done chan struct{} // closed when the reading goroutine returns
	err  error         // why there is no socket (logged once)
}

// fallback is nil on Linux: the socket and the deadline timers are the only
// wake-ups.
func (n *watchNet) fallback() <-chan time.Time { return nil }

func watchAddr(slot uint64) string { return fmt.Sprintf("@picket/w/%010x", slot) }

func watchByte(hash uint32, slot uint64) int64 {
	return watchBase + int64(hash+1)<<watchSlotBits + int64(slot)
}

// watchKey names the Store's file among the process's: its shared
// descriptor when it has one, else its path.
func (s *Store) watchKey() any {
	if s.m != nil && s.m.file != nil {
		return s.m.file
	}
	return s.real
}

// watchNetUp binds the Store's socket and starts its goroutine, once.
// s.watch.mu is held. A Store closed or closing refuses.
func (s *Store) watchNetUp() error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	n := &s.watch.net
	if n.conn != nil || n.err != nil {
		return nil
	}
	for try := 0; try < 16; try++ {
		var b [8]byte
		_, _ = rand.Read(b[:])
		slot := binary.BigEndian.Uint64(b[:]) & (1<<watchSlotBits - 1)
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: watchAddr(slot), Net: "unixgram"})
		if errors.Is(err, unix.EADDRINUSE) {
			continue
		}
		if err != nil {
			n.err = err
			break
		}
		n.conn, n.slot, n.done = c, slot, make(chan struct{})
		go s.watchRead(c, n.done)
		return nil
	}
	if n.err == nil {
		n.err = errors.New("no free slot")
	}
	s.logger.Log("msg", "no watch socket: watches here are woken only by this process's writes and by deadlines", "err", n.err)
	return nil
}

// watchRead wakes the watches that datagrams name, until the socket is
// closed. It blocks in read between datagrams: an idle watch costs nothing.
func (s *Store) watchRead(c *net.UnixConn, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 1+1024)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a datagram too long for buf is cut, not an error; anything else: read on
		}
		switch {
		case n > 1 && buf[0] == watchTopicName:
			s.watch.wake(string(buf[1:n]))
		case n >= 1:
			s.watch.wakeAll()
		}
	}
}

// unwatch closes the socket (the writer goroutine, as it returns, before
// the file's descriptor closes); the waiting watches see s.closing.
func (s *Store) unwatch() {
	s.watch.mu.Lock()
	c, done := s.watch.net.conn, s.watch.net.done
	s.watch.mu.Unlock()
	if c != nil {
		c.Close()
		<-done
	}
}

func (s *Store) holdWatchGuard() { s.lockWatch(unix.F_RDLCK, watchBase) }
func (s *Store) dropWatchGuard() { s.lockWatch(unix.F_UNLCK, watchBase) }

func (s *Store) holdWatchByte(hash uint32) {
	if s.watch.net.conn != nil {
		s.lockWatch(unix.F_RDLCK, watchByte(hash, s.watch.net.slot))
	}
}

func (s *Store) dropWatchByte(hash uint32) {
	if s.watch.net.conn != nil {
		s.lockWatch(unix.F_UNLCK, watchByte(hash, s.watch.net.slot))
	}
}

func (s *Store) lockWatch(typ int16, at int64) {
	if s.m == nil {
		return
	}
	if err := s.m.setLock(typ, at, 1); err != nil {
		s.logger.Log("msg", "watch lock byte", "err", err)
	}
}

// othersWatch reports whether another process watches a name on the file:
// its guard byte is locked. One fcntl.
func (s *Store) othersWatch() bool {
	if s.m == nil {
		return false
	}
	locked, err := s.m.lockedByOthers(watchBase, 1)
	return err == nil && locked
}

// ringWatchers rings the other processes that watch one of names, after a
// commit in which othersWatch said some process watches the file.
func (s *Store) ringWatchers(names []string) {
	for _, name := range names {
		h := nameHash(name)
		lo := watchBase + int64(h+1)<<watchSlotBits
		msg := append([]byte{watchTopicName}, name...)
		count := 0
		s.findWatchers(lo, lo+1<<watchSlotBits, &count, func(slot uint64) {
			ringWatcher(slot, msg)
		})
	}
}

// findWatchers calls found with the slot of every byte in [lo, hi) that
// another open file description has locked, asking the kernel for one
// lock at a time and splitting the range around it; count bounds the
// calls.
func (s *Store) findWatchers(lo, hi int64, count *int, found func(slot uint64)) {
	for lo < hi && *count < watchRingMax {
		*count++
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lo, Len: hi - lo}
		if err := unix.FcntlFlock(s.m.file.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK {
			return
		}
		start, end := max(lk.Start, lo), hi
		if lk.Len > 0 {
			end = min(lk.Start+lk.Len, hi)
		}
		for b := start; b < end && *count < watchRingMax; b++ {
			found(uint64(b-watchBase) & (1<<watchSlotBits - 1))
			*count++
		}
		s.findWatchers(lo, start, count, found)
		lo = end
	}
}

// ringWatcher sends msg to the watch socket of slot without blocking. A
// socket whose queue is full (its process is slow or stopped) is rung
// again with "look at everything", with backoff, until it takes it or is
// gone: its watches must not miss the change.
func ringWatcher(slot uint64, msg []byte) {
	if err := sendWatch(slot, msg); errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOBUFS) {
		retryWatcher(slot)
	}
}

// retries holds the slots whose "look at everything" is pending.
var retries = struct {
	sync.Mutex
	m map[uint64]bool
}{m: map[uint64]bool{}}

// retryWatcher rings slot with watchTopicAll until it is taken, the socket
// is gone, or ten minutes have passed (a process stopped longer finds its
// watches' states by their deadlines only).
func retryWatcher(slot uint64) {
	retries.Lock()
	defer retries.Unlock()
	if retries.m[slot] {
		return
	}
	retries.m[slot] = true
	go func() {
		defer func() {
			retries.Lock()
			delete(retries.m, slot)
			retries.Unlock()
		}()
		delay, until := time.Millisecond, time.Now().Add(10*time.Minute)
		for time.Now().Before(until) {
			time.Sleep(delay)
			err := sendWatch(slot, []byte{watchTopicAll})
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.ENOBUFS) {
				return
			}
			delay = min(2*delay, time.Second)
		}
	}()
}

func sendWatch(slot uint64, msg []byte) error {
	sender.once.Do(func() {
		sender.fd, sender.err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	})
	if sender.err != nil {
		return sender.err
	}
	return unix.Sendto(sender.fd, msg, unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: watchAddr(slot)})
}
