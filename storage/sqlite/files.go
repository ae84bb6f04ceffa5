package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-kit/log/level"
)

// What Open checks of the files it is given, besides one database, one WAL
// (inode.go).
var (
	// ErrReadOnly is returned by Open for a file it cannot write: a
	// read-only mount, a file without write permission, an immutable file.
	// Such a file would open, answer reads and refuse every grant.
	ErrReadOnly = errors.New("sqlite: the database file is read-only")

	// ErrNotPicket is returned by Open for an SQLite file of another
	// application, which picket never migrates.
	ErrNotPicket = errors.New("sqlite: not a picket database")

	// ErrCorrupt is returned by Open for a file whose pages fail SQLite's
	// quick check, and matched by the FailedError of a store that failed
	// closed on corruption (so Health can say why).
	ErrCorrupt = errors.New("sqlite: the database file is corrupt")

	// ErrNotPrivate is returned by Open for a database, -wal or -shm that
	// other users may read and that Open could not make private (it
	// belongs to another user): they hold the holders' secrets.
	ErrNotPrivate = errors.New("sqlite: the database files are open to other users")

	// ErrCopyInUse is returned by Open for a file that was last open with a
	// WAL which is not beside it: it was copied or moved while in use (or
	// its -wal was lost), so its newest grants may be missing. Open the
	// original, or restore the copy with a token floor (WithTokenFloor).
	ErrCopyInUse = errors.New("sqlite: the file was copied while in use: its newest grants may be in a -wal that is not beside it")
)

// picketAppID is the SQLite application_id picket stamps on its files
// ("pikt").
const picketAppID = 0x70696b74

// metaInUse is the meta key of the in-use mark: the -wal its openers use,
// set by the first opener and removed by the last clean close, and
// checkpointed into the database file each time. A copy of the database
// file alone, made while a store had it open or after a crash, carries the
// mark of a WAL that is not beside it, and Open refuses it.
const metaInUse = "wal_in_use"

// resolvePath returns the path SQLite will open: path with every symbolic
// link resolved, as SQLite resolves it before naming the -wal and -shm.
func resolvePath(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// enter resolves the path, joins the file's openers up to the gate
// (inode.go), which checks that the file is writable, identifies the file
// and only then makes the files private, all before the writer connection
// opens them.
func (s *Store) enter() error {
	real, err := resolvePath(s.path)
	if err != nil {
		return err
	}
	s.real = real
	if s.m, err = enterFile(real, s.busy); err != nil {
		return err
	}
	// The -wal a crashed opener left, before any connection of this Store
	// recovers (and, closing, deletes) it: the in-use mark must name it.
	s.walBefore = walMark(real)
	return s.checkFile() // identify.go: identify, inspect, then make private
}

// inspect refuses a corrupt file or another application's before the writer
// connection opens, which switches the file to WAL mode: nothing changes in
// a file that is refused. Its connection is SQLite's, whose close never
// drops another connection's locks.
func (s *Store) inspect() error {
	db, err := sql.Open("sqlite", fileURI(s.real, []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(s.busy.Milliseconds(), 10) + ")",
		"_pragma=query_only(1)",
	}))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := quickCheck(ctx, conn); err != nil {
		return err
	}
	return checkOwnFile(ctx, conn)
}

// admit runs once the writer connection is open: a read makes SQLite open
// the -wal and -shm, the Store proves it shares them with every other live
// opener (first: there was none) and makes them private.
func (s *Store) admit(ctx context.Context) (first bool, err error) {
	err = s.retryBusy(ctx, func() error {
		var n int
		return s.w.conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n)
	})
	if err != nil && isFatal(err) {
		return false, fmt.Errorf("%w: %v; restore it from a backup (picket restore)", ErrCorrupt, err)
	}
	if err != nil {
		return false, err
	}
	if first, err = s.m.join(); err != nil {
		return false, err
	}
	return first, s.tightenModes(s.real)
}

// tightenModes takes read and write access from group and others on the
// database and, where they exist, its -wal and -shm: they hold the holders'
// secrets. A file Open cannot tighten (not its owner) is refused.
func (s *Store) tightenModes(real string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		p := real + suffix
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		if mode&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, mode&^0o077); err != nil {
			return fmt.Errorf("%w: %s has mode %#o, and it holds the holders' secrets: "+
				"picket could not make it private (%v); run chmod 600 on the database and its -wal and -shm", ErrNotPrivate, p, mode, err)
		}
		level.Warn(s.logger).Log("msg", "the file was open to other users: made it private", "path", p,
			"from", fmt.Sprintf("%#o", mode), "to", fmt.Sprintf("%#o", mode&^0o077))
	}
	return nil
}

// checkOwnFile refuses a file that is not picket's: another application's
// application_id, or tables of its own at user_version 0, or a version
// without picket's tables. It runs before any migration.
func checkOwnFile(ctx context.Context, q *sql.Conn) error {
	var app, version int64
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("read application id: %w", err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if app != 0 && app != picketAppID {
		return fmt.Errorf("%w: its application_id is %#x (picket's is %#x): another application's file, left untouched",
			ErrNotPicket, app, picketAppID)
	}
	rows, err := q.QueryContext(ctx,
		"SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return fmt.Errorf("read the tables: %w", err)
	}
	defer rows.Close()
	tables := map[string]bool{}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		tables[n] = true
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if version == 0 && len(names) > 0 {
		return fmt.Errorf("%w: it has tables of its own (%s) and no picket schema version: another application's file, left untouched",
			ErrNotPicket, strings.Join(names, ", "))
	}
	if version > 0 && (!tables["meta"] || !tables["counter"] || !tables["leases"]) {
		return fmt.Errorf("%w: it is at schema version %d but lacks picket's tables (has: %s): another application's file, left untouched",
			ErrNotPicket, version, strings.Join(names, ", "))
	}
	return nil
}

// quickCheck runs PRAGMA quick_check, which reads every page of the file
// and checks each b-tree page's structure (O(N), not the O(N log N) of
// integrity_check), so a file with corrupt pages is refused at open instead
// of answering until a grant touches the bad page. It costs one read of the
// file: on a 2-core machine about 35 ms per MB (a 111 MB file of a million
// leases: 3.6-4.5 s); a store of ten thousand leases is a megabyte or two.
func quickCheck(ctx context.Context, q *sql.Conn) error {
	var res string
	err := q.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res)
	if err != nil && isFatal(err) {
		return fmt.Errorf("%w: quick_check: %v; restore it from a backup (picket restore)", ErrCorrupt, err)
	}
	if err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("%w: quick_check: %s; restore it from a backup (picket restore)", ErrCorrupt, res)
	}
	return nil
}

// settleFile runs once the file is at the current schema, still holding the
// gate: in one immediate transaction it refuses a backup copy or a copy made
// while in use unless a token floor was given, raises the counter to the
// floor, stamps picket's application_id and, for the first live opener,
// sets the in-use mark; then it checkpoints, so that the mark is in the
// database file itself.
func (s *Store) settleFile(ctx context.Context, first bool) error {
	mark := walMark(s.real)
	wrote := false
	err := s.retryBusy(ctx, func() (err error) {
		wrote = false
		if _, err := s.w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				s.rollback()
			}
		}()
		inUse, err := metaValue(ctx, s.w.conn, metaInUse)
		if err != nil {
			return err
		}
		backup, err := metaValue(ctx, s.w.conn, metaBackup)
		if err != nil {
			return err
		}
		if s.floor == 0 && backup != "" {
			return fmt.Errorf("%w (%s): tokens handed out after it was taken could be handed out again; "+
				"restore it with a token floor above every token used since (picket restore -token-floor N)", ErrBackupCopy, backup)
		}
		if s.floor == 0 && first && inUse != "" && inUse != s.walBefore {
			return s.copyInUseError(ctx, inUse) // inuse.go
		}
		if s.floor > 0 {
			if err := s.applyFloor(ctx, first); err != nil { // floor.go
				return err
			}
			inUse, wrote = "", true
		}
		if s.kvFloor, err = readKVFloor(ctx, s.w.conn); err != nil {
			return err
		}
		if first && mark != "" && inUse != mark {
			if _, err := s.w.conn.ExecContext(ctx, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", metaInUse, mark); err != nil {
				return err
			}
			wrote = true
		}
		var app int64
		if err := s.w.conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
			return err
		}
		if app != picketAppID {
			if _, err := s.w.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", picketAppID)); err != nil {
				return err
			}
		}
		_, err = s.w.conn.ExecContext(ctx, "COMMIT")
		return err
	})
	if err != nil || !wrote {
		return err
	}
	if first {
		if err := s.markInFile(ctx); err != nil { // inuse.go
			return err
		}
	}
	s.checkpoint(ctx)
	return nil
}

// checkpoint copies the WAL into the database file and truncates it, if no
// reader of another process prevents it; it only logs a failure.
func (s *Store) checkpoint(ctx context.Context) {
	var busy, logPages, done int
	err := s.w.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done)
	if err != nil || busy != 0 {
		level.Info(s.logger).Log("msg", "checkpoint incomplete: the newest state stays in the -wal too", "err", err, "path", s.path)
	}
}

// leave runs in Close after the writer goroutine returned: holding the gate,
// the last live opener removes the in-use mark, checkpoints and truncates
// the WAL, so that a stopped store is one self-contained file; then every
// connection is closed and the Store leaves the file's openers.
func (s *Store) leave() error {
	gate := s.m.reenter(s.busy)
	defer s.m.exit(true)
	if !gate {
		s.keepWAL() // gate.go: the file stays openable
	}
	if s.rdb != nil {
		s.rdb.Close() // readers would hold the checkpoint back
		s.rdb = nil
	}
	if s.w != nil && gate {
		// Even after failing closed: SQLite's own last close checkpoints
		// and deletes the -wal when it can, and a mark naming a deleted
		// -wal would refuse the next Open. The mark says nothing about
		// tokens, so removing it is safe whatever state the file is in.
		ctx := context.Background()
		if s.m.last() {
			if _, err := s.w.conn.ExecContext(ctx, "DELETE FROM meta WHERE key = ?", metaInUse); err != nil {
				level.Info(s.logger).Log("msg", "could not remove the in-use mark", "err", err, "path", s.path)
			}
		}
		if s.failure.Load() == nil {
			s.checkpoint(ctx)
		}
	}
	return s.closeDBs()
}

func metaValue(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}
