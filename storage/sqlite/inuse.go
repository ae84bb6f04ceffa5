package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
)

// The in-use mark (files.go) only works once it is in the database file
// itself: a cp of the file alone copies what the last checkpoint wrote
// there. A reader of another connection that holds a snapshot from before
// the mark was written (an sqlite3 query running when the store opens;
// Litestream holds one by design) keeps every newer frame, the mark's
// included, out of the database file, while the store grants on in the
// -wal: a cp then opens without a floor and hands those tokens out again.
// So the first opener waits, up to the busy timeout, until a checkpoint has
// copied the whole WAL, mark included, into the database file, and refuses
// to open otherwise (taking the mark back out, so that the reader's own
// last checkpoint does not leave a mark naming a -wal it deletes).

// ErrOldReader is returned by Open when a read transaction of another
// connection, older than the store's Open, kept the in-use mark out of the
// database file for the whole busy timeout.
var ErrOldReader = errors.New("sqlite: a read transaction older than this store keeps the in-use mark out of the database file")

// markCheckpointPoll is how often the first opener tries the checkpoint
// again while an old reader holds it back.
const markCheckpointPoll = 10 * time.Millisecond

// markInFile runs after the first opener committed the in-use mark: it
// checkpoints until the whole WAL is in the database file, for up to the
// busy timeout.
func (s *Store) markInFile(ctx context.Context) error {
	start := time.Now()
	for {
		var busy, logPages, done int
		err := s.w.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done)
		if err != nil && !isBusy(err) {
			return fmt.Errorf("checkpoint the in-use mark: %w", err)
		}
		if err == nil && logPages >= 0 && done == logPages {
			return nil
		}
		if time.Since(start) >= s.busy {
			s.unmark(ctx)
			return fmt.Errorf("%w: for %v a read transaction of another connection (an sqlite3 shell, Litestream, a backup "+
				"tool), open since before this store, kept the mark that makes a cp of a live store refuse to open out of "+
				"the database file: a cp taken now would hand out this store's tokens again; end that reader (start "+
				"programs that keep a read transaction open, such as Litestream, after picket) and open again",
				ErrOldReader, s.busy.Round(time.Millisecond))
		}
		time.Sleep(markCheckpointPoll)
	}
}

// unmark takes the in-use mark back out after a refused Open.
func (s *Store) unmark(ctx context.Context) {
	if _, err := s.w.conn.ExecContext(ctx, "DELETE FROM meta WHERE key = ?", metaInUse); err != nil {
		level.Info(s.logger).Log("msg", "could not remove the in-use mark", "err", err, "path", s.path)
	}
}
