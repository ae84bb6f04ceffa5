package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/token"
)

// The state is three files while a store is open: the database, and the -wal
// and -shm beside it, and the newest grants may live in the -wal alone. A
// copy of the database file alone can hand out again tokens that were
// acknowledged. So:
//
//   - Close checkpoints and truncates the WAL (files.go): a stopped store is
//     one self-contained file;
//   - Backup writes a consistent copy of a live store, marked as a backup;
//   - a backup, or a copy of a file made while it was in use, opens only
//     with WithTokenFloor, which raises the counter past every token handed
//     out since the copy was taken (the operator knows one: the highest
//     token the fenced resources have seen).

// ErrBackupCopy is returned by Open for a copy written by Backup, opened
// without WithTokenFloor: tokens handed out after the copy was taken would
// be handed out again.
var ErrBackupCopy = errors.New("sqlite: the file is a backup copy and needs a token floor to be used")

// metaBackup is the meta key that marks a backup copy: when it was taken,
// from where, and the counter then.
const metaBackup = "backup"

// WithTokenFloor raises the token counter to at least floor when the file
// opens, in the same durable transaction that lifts a backup's mark (or the
// mark of a copy made while the file was in use): every later token is
// above floor. Give a floor above every token handed out since the copy was
// taken, such as the highest token the fenced resources have seen. The same
// transaction raises every fenced key's token to at least floor-1, and a
// fenced write below floor-1 is stale from then on, on every key (floor.go).
// Only the file's first live opener applies a floor: beside a running store
// Open fails with ErrInUse. Between 1 and token.Max; 0 (the default) raises
// nothing and refuses copies.
func WithTokenFloor(floor token.Token) Option {
	return func(cfg *config) { cfg.tokenFloor = floor }
}

func validateFloor(f token.Token) error {
	if f > token.Max {
		return invalidf("token floor %d is above %d", f, token.Max)
	}
	return nil
}

// raiseCounter raises the counter to at least floor, inside the caller's
// transaction. It never lowers it.
func raiseCounter(ctx context.Context, q querier, floor token.Token) error {
	if _, err := q.ExecContext(ctx, "UPDATE counter SET value = max(value, ?) WHERE id = 1", int64(floor)); err != nil {
		return fmt.Errorf("raise the token counter to %d: %w", floor, err)
	}
	return nil
}

// Backup writes a consistent copy of the store, as it is at one instant, to
// the new file out (mode 0600, synced, then renamed into place and its
// directory synced), marked as a backup: Open refuses it unless given
// WithTokenFloor. Writes go on meanwhile. It returns the counter of the
// copy: the highest token the copy knows.
//
// Errors: lease.ErrInvalid if out exists; ErrClosed; or the error of SQLite
// or the file system.
func (s *Store) Backup(ctx context.Context, out string) (token.Token, error) {
	select {
	case <-s.closing:
		return 0, ErrClosed
	default:
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return 0, invalidf("backup to %q: %v", out, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return 0, invalidf("backup to %s: the file exists; give a new file", abs)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", abs, time.Now().UnixNano())
	n, err := s.backupTo(ctx, tmp)
	if err == nil {
		err = os.Rename(tmp, abs)
	}
	if err == nil {
		err = syncDir(filepath.Dir(abs))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("sqlite: backup %s to %s: %w", s.path, abs, err)
	}
	return n, nil
}

func (s *Store) backupTo(ctx context.Context, tmp string) (token.Token, error) {
	// VACUUM INTO wants a new or empty file; creating it first makes it
	// private from the start.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	f.Close()
	// A connection of its own: the writer's is the writer goroutine's, and
	// the read pool's are query-only. VACUUM INTO reads one snapshot, in a
	// read transaction, so writers go on.
	db, err := sql.Open("sqlite", fileURI(s.real, []string{"_pragma=busy_timeout(" + fmt.Sprint(s.busy.Milliseconds()) + ")"}))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return 0, err
	}
	// Mark the copy, and take the in-use mark of the live file off it.
	cp, err := sql.Open("sqlite", fileURI(tmp, []string{"_pragma=synchronous(FULL)", "_pragma=journal_mode(DELETE)"}))
	if err != nil {
		return 0, err
	}
	defer cp.Close()
	var n int64
	if err := cp.QueryRowContext(ctx, "SELECT value FROM counter WHERE id = 1").Scan(&n); err != nil {
		return 0, err
	}
	mark := fmt.Sprintf("taken %s from %s, counter %d", time.Now().UTC().Format(time.RFC3339), s.path, n)
	if _, err := cp.ExecContext(ctx, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", metaBackup, mark); err != nil {
		return 0, err
	}
	if _, err := cp.ExecContext(ctx, "DELETE FROM meta WHERE key = ?", metaInUse); err != nil {
		return 0, err
	}
	if err := cp.Close(); err != nil {
		return 0, err
	}
	if err := syncFile(tmp); err != nil {
		return 0, err
	}
	return token.Token(n), nil
}

// Restore copies the backup file to db, a new file (mode 0600, synced),
// and opens it once with WithTokenFloor(floor), which raises its counter to
// at least floor and lifts the backup's mark, durably. If backup and db are
// the same file, it lifts the mark in place. It returns the counter after.
//
// Errors: lease.ErrInvalid for a floor of 0 or above token.Max, or a db
// that exists; ErrInUse if a running store has db open; or the error of
// Open or the file system.
func Restore(backup, db string, floor token.Token, opts ...Option) (token.Token, error) {
	if floor == 0 {
		return 0, invalidf("restore needs a token floor above every token handed out since the backup was taken")
	}
	if err := validateFloor(floor); err != nil {
		return 0, err
	}
	src, err := os.Stat(backup)
	if err != nil {
		return 0, fmt.Errorf("sqlite: restore: %w", err)
	}
	dst, err := os.Stat(db)
	switch {
	case err == nil && os.SameFile(src, dst):
	case err == nil:
		return 0, invalidf("restore to %s: the file exists; give a new file (stop the store and move it away first)", db)
	case !errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("sqlite: restore: %w", err)
	default:
		if err := copyPrivate(backup, db); err != nil {
			return 0, fmt.Errorf("sqlite: restore %s to %s: %w", backup, db, err)
		}
	}
	s, err := Open(db, append(opts, WithTokenFloor(floor))...)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.rdb.QueryRowContext(context.Background(), "SELECT value FROM counter WHERE id = 1").Scan(&n)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return token.Token(n), err
}

// copyPrivate copies src to the new file dst (0600), synced with its
// directory.
func copyPrivate(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
