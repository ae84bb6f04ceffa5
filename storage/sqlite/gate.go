package sqlite

import (
	"github.com/go-kit/log/level"
	"modernc.org/sqlite"
)

// keepWAL runs in Close when the Store could not take the gate (another
// process holds it, stopped: gate_linux.go): without the gate it must not
// do the last opener's work (remove the in-use mark, checkpoint), and
// SQLite's own last close would checkpoint and delete the -wal, leaving a
// mark that names a deleted -wal: the next Open would refuse the file as a
// copy. So the writer connection keeps its -wal (SQLITE_FCNTL_PERSIST_WAL):
// the mark goes on naming the -wal beside the file, which opens.
func (s *Store) keepWAL() {
	if s.w == nil || s.w.conn == nil {
		return
	}
	err := s.w.conn.Raw(func(dc any) error {
		fc, ok := dc.(sqlite.FileControl)
		if !ok {
			return nil
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	})
	level.Warn(s.logger).Log("msg", "closing without the file's gate: the -wal is kept beside the file, "+
		"the next opener recovers it", "err", err, "path", s.path)
}
