package sqlite

import (
	"encoding/hex"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// liveBase is the first liveness byte (bell.go): 2^61, below the one-WAL
// proof's bytes (2^62 and up) and far above SQLite's (around 2^30).
const liveBase int64 = 1 << 61

// liveByte is the liveness byte of the Store named id.
func liveByte(id string) int64 {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) < 8 {
		return liveBase
	}
	var v int64
	for _, c := range b[:8] {
		v = v<<8 | int64(c)
	}
	return liveBase + v&(1<<60-1)
}

type bellConn = *net.UnixConn

func bellAddr(id string) string { return "@picket/" + id }

func listenBell(id string) (bellConn, error) {
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: bellAddr(id), Net: "unixgram"})
}

// sender is the process's socket for ringing other processes' bells.
var sender struct {
	once sync.Once
	fd   int
	err  error
}

// ring sends msg to the bell of the Store named id, without blocking; a
// bell that is gone, full or in another network namespace is not rung.
func ring(id string, msg []byte) {
	sender.once.Do(func() {
		sender.fd, sender.err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	})
	if sender.err != nil {
		return
	}
	_ = unix.Sendto(sender.fd, msg, unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: bellAddr(id)})
}

// holdLive read-locks the liveness byte of id.
func (s *Store) holdLive(id string) error {
	if s.m == nil {
		return errNoDescriptor
	}
	return s.m.setLock(unix.F_RDLCK, liveByte(id), 1)
}

// dropLive unlocks it.
func (s *Store) dropLive(id string) {
	if s.m != nil {
		_ = s.m.setLock(unix.F_UNLCK, liveByte(id), 1)
	}
}

// liveByteLocked reports whether the liveness byte of id is locked by
// another open file description (true when it cannot tell).
func (s *Store) liveByteLocked(id string) bool {
	if s.m == nil {
		return true
	}
	locked, err := s.m.lockedByOthers(liveByte(id), 1)
	return locked || err != nil
}
