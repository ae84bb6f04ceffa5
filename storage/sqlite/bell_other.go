//go:build !linux

package sqlite

import (
	"errors"
	"time"
)

// Without open file description locks and abstract sockets there is no
// liveness byte and no bell: every row counts as live, and waiters find
// their grants by the fallback check (bell.go).

type bellConn interface {
	Read([]byte) (int, error)
	SetReadDeadline(time.Time) error
	Close() error
}

var errNoBell = errors.New("no bell on this platform")

func listenBell(string) (bellConn, error)   { return nil, errNoBell }
func ring(string, []byte)                   {}
func (s *Store) holdLive(string) error      { return errNoDescriptor }
func (s *Store) dropLive(string)            {}
func (s *Store) liveByteLocked(string) bool { return true }
