package sqlite

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/picketlock/picket/token"
)

// The file watch: a waiter in this process learns that a release in another
// process handed it the name from a change notification on the -wal file,
// which every commit of every process writes (inotify on Linux,
// watch_linux.go), not from a timer. The notification comes as the frames
// are written, before the commit is visible to readers (SQLite publishes it
// in the -shm index after the fsync), so after each notification the
// rows of this process are read again at growing intervals, from 1 ms up to
// watchRecheckMax. Elsewhere, or if the watch cannot be set up, the
// waiting calls' backoff timers (up to 250 ms) find the grant instead.

const watchRecheckMax = 512 * time.Millisecond

// startWatch starts the watch unless it runs; the writer goroutine calls
// it when a batch queued a row. The watch stops by itself once no call of
// this process has a row (watchIdle after the last notification).
func (s *Store) startWatch() {
	h := &s.waiters
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watching || h.watchOff || noWatch.Load() {
		return
	}
	f, err := openWatch(s.real + "-wal")
	if err != nil {
		h.watchOff = true
		s.logger.Log("msg", "no change notification on the file: waiters of other processes are found by a timer", "err", err)
		return
	}
	h.watching, h.watchFile, h.watchDone = true, f, make(chan struct{})
	go s.watchLoop(f, h.watchDone)
}

// stopWatch stops the watch for good and waits for its goroutine; the
// writer goroutine calls it as it returns.
func (s *Store) stopWatch() {
	h := &s.waiters
	h.mu.Lock()
	f, done := h.watchFile, h.watchDone
	h.watchFile, h.watchDone, h.watchOff = nil, nil, true
	h.mu.Unlock()
	if f != nil {
		f.Close()
		<-done
	}
}

// watchIdle is how long the watch waits for a notification before it
// checks whether it is still needed.
const watchIdle = 50 * time.Millisecond

func (s *Store) watchLoop(f *os.File, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 4096)
	// A grant may have been committed, or be committing, before the watch
	// began: check at once, and again, as after a notification.
	recheck := time.Millisecond
	s.checkGrants()
	for {
		wait := watchIdle
		if recheck > 0 {
			wait = recheck
		}
		if err := f.SetReadDeadline(time.Now().Add(wait)); err != nil {
			return
		}
		_, err := f.Read(buf)
		switch {
		case err == nil:
			recheck = time.Millisecond
		case errors.Is(err, os.ErrDeadlineExceeded):
			if recheck == 0 && s.waiters.unwatch(f) {
				return
			}
			if recheck *= 2; recheck > watchRecheckMax {
				recheck = 0
			}
		default:
			return // closed by stopWatch
		}
		s.checkGrants()
	}
}

// unwatch ends the watch on f if no call of this process has a row.
func (h *hub) unwatch(f *os.File) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.rows) > 0 || h.watchFile != f {
		return false
	}
	h.watching, h.watchFile, h.watchDone = false, nil, nil
	f.Close()
	return true
}

// checkGrants reads the rows of this process that another one granted, and
// wakes their calls.
func (s *Store) checkGrants() {
	h := &s.waiters
	if !h.queued() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rows, err := s.rdb.QueryContext(ctx, "SELECT seq, token, lease_expires FROM waiters WHERE process = ? AND token > 0", h.process())
	if err != nil {
		return // the waiters' timers will find it
	}
	defer rows.Close()
	for rows.Next() {
		var seq, tok, exp int64
		if rows.Scan(&seq, &tok, &exp) != nil {
			return
		}
		h.deliver(seq, remoteGrant{token: token.Token(tok), expires: time.Duration(exp)})
	}
}
