package sqlite_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/picketlock/picket/storage/sqlite"
)

// TestOpenMissingDirectory: a path in a directory that does not exist is a
// clear error (it panicked once, leaving an opener it never joined).
func TestOpenMissingDirectory(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "p.db"))
	if err == nil {
		s.Close()
		t.Fatal("Open in a missing directory succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open in a missing directory: %v; want an error matching fs.ErrNotExist", err)
	}
}
