package sqlite

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// checkPath refuses what is not a file: an in-memory database cannot be
// shared by the writer and the read pool, and would lose every token on
// exit.
func checkPath(path string) (string, error) {
	switch {
	case path == "":
		return "", invalidf("empty path")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return "", invalidf("path %q: give a file path, not an in-memory database or a URI", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", invalidf("path %q: %v", path, err)
	}
	return abs, nil
}

// writerDSN is the DSN of the one writer connection: WAL, every commit
// synced (synchronous=FULL), BEGIN IMMEDIATE so that no transaction has to
// upgrade its lock half-way, and a -wal started over cut back to walLimit.
// Its busy_timeout is short: retryBusy polls.
func writerDSN(path string, busy time.Duration, existing bool) string {
	params := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)",
		"_pragma=foreign_keys(1)",
		"_pragma=journal_size_limit(" + strconv.Itoa(walLimit) + ")", // wal.go
		"_txlock=immediate",
	}
	if existing {
		params = append(params, "mode=rw") // WithExisting: SQLite must not create it either
	}
	return fileURI(path, params)
}

// readerDSN is the DSN of the read pool: the same file, query-only. The file
// is in WAL mode already (the writer is opened first), so readers never wait
// for the writer.
func readerDSN(path string, busy time.Duration) string {
	return fileURI(path, []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")",
		"_pragma=query_only(1)",
	})
}

// fileURI renders path as a SQLite file: URI, escaped so that '?', '#' and
// '%' in a file name stay part of it.
func fileURI(path string, params []string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: C:/x becomes /C:/x
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: strings.Join(params, "&")}
	return u.String()
}

// createMu serialises createPrivate within the process: closing a
// descriptor of a file drops every POSIX lock this process holds on it, so
// no Open may be taking SQLite's locks on the file meanwhile.
var createMu sync.Mutex

// createPrivate creates the file at path, empty (an empty file is an empty
// SQLite database), readable by its owner only, unless it exists. The file
// holds the holders' secrets; SQLite would create it world-readable, and
// its -wal and -shm files take the database file's permissions. With
// existing (WithExisting) it creates nothing: the file must be there.
func createPrivate(path string, existing bool) error {
	createMu.Lock()
	defer createMu.Unlock()
	if existing { // WithExisting: open it as it is, or fail
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Make the new name durable now rather than rely on SQLite syncing the
	// directory with its first WAL sync: a grant is never acknowledged in a
	// file whose name a power loss could take away.
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs the directory dir, so that the names in it survive a power
// loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
