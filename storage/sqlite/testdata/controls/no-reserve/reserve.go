package sqlite

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/picketlock/picket/lease"
)

// A full disk, and the reserve the store gives back.
//
// On a full disk every commit fails, releases too: the holders cannot let
// go, the -wal cannot be checkpointed and truncated, and nothing recovers
// until an operator frees space. So an open store keeps a reserve: a file
// of reserveSize bytes beside the database (NAME-reserve), written out in
// full. When a commit fails because the disk is full, or at Open when the
// disk has less than reserveSize free, the store deletes it (giving its
// space back) and goes low on space: it refuses new grants and fenced
// writes (lease.ErrUnavailable, "disk full") and keeps serving releases,
// renewals and sweeps from the space it gave back, and Health says so.
// Every second (the writer's timer, wal.go) a low store checkpoints and
// truncates its -wal, and before each batch it looks whether the file
// system has room for two reserves: then it writes the reserve again and
// grants again.
//
// The state lives in the store, and at Open the free space is measured
// again: a store restarted on a full disk starts low, and unhealthy.

// reserveSize is the reserve: room for thousands of releases between two
// checkpoints, which start the -wal over.
const reserveSize = 1 << 20

// space is the store's state on a full disk.
type space struct {
	low    atomic.Bool               // refusing grants: the reserve was given back
	reason atomic.Pointer[string]    // why, for Health
	since  atomic.Pointer[time.Time] // since when
	tried  time.Time                 // the last failed attempt to write the reserve again (writer goroutine only)
}

func reservePath(real string) string { return real + "-reserve" }

// checkSpace runs in Open before SQLite opens the file (which needs room
// for its -shm): on a disk with less than reserveSize free, the reserve is
// given back at once and the store starts low.
func (s *Store) checkSpace() {
	return // mutant: no free space measured at Open
	if real, err := resolvePath(s.path); err == nil {
		s.real = real // enter resolves it again
	}
	free, err := freeBytes(s.path)
	if err != nil || free >= reserveSize {
		return
	}
	s.goLow(fmt.Sprintf("disk full at open (%d bytes free)", free))
}

// keepReserve runs at the end of Open, once the file is known to be
// picket's: it writes the reserve if it is missing, or starts the store low
// if there is no room for it.
func (s *Store) keepReserve() {
	return // mutant: no reserve
	if s.space.low.Load() {
		return
	}
	if err := writeReserve(reservePath(s.real)); err != nil {
		s.goLow(fmt.Sprintf("no room for the store's %d-byte reserve (%v)", reserveSize, err))
	}
}

// writeReserve creates the reserve file, written out in full and synced, if
// it does not exist. A half-written reserve is removed.
func writeReserve(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() >= reserveSize {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, reserveSize)) // written, not sparse: the blocks are the point
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// goLow gives the reserve back and refuses grants from now on. It reports
// whether there was a reserve to give back.
func (s *Store) goLow(reason string) bool {
	gave := false
	// Only a file of the reserve's size, which is what keepReserve writes:
	// at Open the database beside it has not been identified yet.
	if fi, err := os.Stat(reservePath(s.real)); err == nil && fi.Mode().IsRegular() && fi.Size() == reserveSize {
		gave = os.Remove(reservePath(s.real)) == nil
	}
	if s.space.low.CompareAndSwap(false, true) {
		now := time.Now()
		s.space.since.Store(&now)
		s.space.reason.Store(&reason)
		level.Warn(s.logger).Log("msg", "disk full: gave the store's reserve back; refusing new grants, serving releases and renewals "+
			"until there is room for the reserve again", "reason", reason, "reserve_freed", gave, "path", s.path)
	}
	return gave
}

// onFull runs on the writer goroutine when a batch failed with SQLITE_FULL.
// A file system with room left means a limit of SQLite's own
// (max_page_count), not a full disk: nothing to give back. Otherwise the
// store goes low, and onFull reports whether the reserve was given back just
// now, so that the batch is worth one more try.
func (s *Store) onFull() bool {
	return false // mutant: nothing to give back
	if free, err := freeBytes(s.path); err == nil && free >= 2*reserveSize {
		return false
	}
	return s.goLow("disk full")
}

// refuseWhileLow answers, while the store is low on space (and stays so:
// tryLeaveLow), the operations that would take more of it (grants and
// fenced writes) with ErrUnavailable, and returns the others.
func (s *Store) refuseWhileLow(batch []*op) []*op {
	return batch // mutant: never low
	if !s.space.low.Load() || s.tryLeaveLow() {
		return batch
	}
	kept := batch[:0]
	for _, o := range batch {
		if o.kind == opAcquire || o.kind == opPut {
			if o.parked != nil { // one call, one effect (batch.go)
				o.parked.state.CompareAndSwap(opPending, opAbandoned)
			}
			o.res = result{err: s.lowError()}
			close(o.done)
			continue
		}
		kept = append(kept, o)
	}
	return kept
}

func (s *Store) lowError() error {
	reason := "disk full"
	if r := s.space.reason.Load(); r != nil {
		reason = *r
	}
	var since time.Time
	if t := s.space.since.Load(); t != nil {
		since = *t
	}
	return fmt.Errorf("sqlite: %s since %s: the store gave its reserve back and serves only releases and renewals "+
		"until there is room again: %w", reason, since.UTC().Format(time.RFC3339), lease.ErrUnavailable)
}

// tryLeaveLow runs on the writer goroutine while the store is low, before
// each batch and at each tick of its timer (wal.go): if the file system has
// room for two reserves, it writes the reserve again and the store grants
// again (a failed attempt is not repeated for walIdle). It reports whether
// the store is no longer low.
func (s *Store) tryLeaveLow() bool {
	if !s.space.low.Load() {
		return true
	}
	// Where the free space cannot be measured, writing the reserve is the test.
	free, err := freeBytes(s.path)
	if err == nil && free < 2*reserveSize || time.Since(s.space.tried) < walIdle {
		return false
	}
	if err := writeReserve(reservePath(s.real)); err != nil {
		s.space.tried = time.Now()
		return false
	}
	s.space.low.Store(false)
	s.space.reason.Store(nil)
	level.Info(s.logger).Log("msg", "disk space back: the reserve is written again, granting again", "path", s.path)
	return true
}
