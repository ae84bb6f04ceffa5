package sqlite

import (
	"context"
	"os"
	"time"

	"github.com/go-kit/log/level"
)

// Keeping the -wal small.
//
// SQLite appends every changed page to the -wal and copies them into the
// database file at a checkpoint (after each commit that leaves more than
// 1000 pages in it); the next writer after a complete checkpoint starts
// the -wal over from its beginning, but the file keeps the size of the
// largest transaction, or of everything written while a reader held an old
// snapshot, until the last connection closes. Four things keep it small:
// sweeps in chunks (sweep.go); journal_size_limit on the writer, so that a
// -wal started over is cut back to walLimit; a TRUNCATE checkpoint by the
// writer once the store has been idle for walIdle with a -wal above
// walLimit; and a warning when a reader of another process holds
// checkpoints back long enough for the -wal to grow past walWarn. Stats
// reports the -wal's size (picket_sqlite_wal_bytes).

const (
	walLimit = 4 << 20          // journal_size_limit, and the size the idle checkpoint brings the -wal under
	walIdle  = time.Second      // no write for this long: truncate a -wal above walLimit
	walWarn  = 32 << 20         // a -wal this big means a reader holds checkpoints back
	walNag   = 10 * time.Minute // at most one such warning per walNag
)

// walKeeper is the writer goroutine's state for keeping the -wal small.
type walKeeper struct {
	timer   *time.Timer
	armed   bool
	batches uint64 // committed or attempted batches
	seen    uint64 // batches at the timer's last firing
	warned  time.Time
}

func newWALKeeper(low bool) *walKeeper {
	t := time.NewTimer(walIdle)
	if !low { // a store that opened low on space (reserve.go) ticks at once
		t.Stop()
	}
	return &walKeeper{timer: t, armed: low}
}

// wrote notes a batch; it arms the timer if it is not armed (one branch per
// batch on the grant path).
func (k *walKeeper) wrote() {
	k.batches++
	if !k.armed {
		k.armed = true
		k.timer.Reset(walIdle)
	}
}

// tick runs on the writer goroutine when the timer fires. While batches
// keep coming it only re-arms and watches for a -wal that a reader keeps
// from starting over; once a whole walIdle passed without a batch it
// truncates a -wal above walLimit.
func (s *Store) walTick(k *walKeeper) {
	k.armed = false
	size := walBytes(s.real)
	idle := k.batches == k.seen
	k.seen = k.batches
	if !idle {
		k.armed = true
		k.timer.Reset(walIdle)
		if size > walWarn {
			s.warnWAL(k, size, "the -wal keeps growing")
		}
		return
	}
	low := s.space.low.Load() // reserve.go: a store low on space checks every walIdle
	if low {
		k.armed = true
		k.timer.Reset(walIdle)
	}
	if size <= walLimit && !low {
		return
	}
	if size > 0 && s.truncateWAL() {
		level.Debug(s.logger).Log("msg", "idle: truncated the -wal", "from_bytes", size, "path", s.path)
		s.tryLeaveLow()
		return
	}
	s.tryLeaveLow()
	if size <= walLimit {
		return
	}
	// A reader holds a snapshot the checkpoint cannot pass: try again later.
	if !k.armed {
		k.armed = true
		k.timer.Reset(walIdle)
	}
	if size > walWarn {
		s.warnWAL(k, size, "the idle store cannot truncate its -wal")
	}
}

// truncateWAL copies the -wal into the database file and truncates it to
// nothing, unless a reader holds a snapshot it cannot pass; it reports
// whether it did.
func (s *Store) truncateWAL() bool {
	var busy, logPages, done int
	err := s.w.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done)
	return err == nil && busy == 0
}

func (s *Store) warnWAL(k *walKeeper, size int64, what string) {
	if time.Since(k.warned) < walNag {
		return
	}
	k.warned = time.Now()
	level.Warn(s.logger).Log("msg", what+": a reader has held one snapshot for a long time "+
		"(a long read transaction: an sqlite3 shell, a backup or replication tool), so checkpoints cannot start it over; "+
		"it grows with every write until that reader ends", "wal_bytes", size, "path", s.path)
}

// walBytes is the size of the -wal beside path (0 if there is none).
func walBytes(path string) int64 {
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}
