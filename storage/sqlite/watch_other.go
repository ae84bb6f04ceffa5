//go:build !linux

package sqlite

import "time"

// Without open file description locks and abstract sockets, a watch is
// woken at once only by the writes of this process; changes made by other
// processes on the file are found by reading again every second.

const watchFallback = time.Second

type watchNet struct{}

func (n *watchNet) fallback() <-chan time.Time { return time.After(watchFallback) }

func (s *Store) watchKey() any { return s.real }

func (s *Store) watchNetUp() error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
		return nil
	}
}

func (s *Store) unwatch()              {}
func (s *Store) holdWatchGuard()       {}
func (s *Store) dropWatchGuard()       {}
func (s *Store) holdWatchByte(uint32)  {}
func (s *Store) dropWatchByte(uint32)  {}
func (s *Store) ringWatchers([]string) {}
func (s *Store) othersWatch() bool     { return false }
