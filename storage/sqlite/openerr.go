package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// openFailed wraps the error that stopped Open, naming the path once: a
// *fs.PathError about the path itself shows only its cause ("sqlite: open
// /x.db: is a directory", not "open /x.db: open /x.db: ..."), and a missing
// directory is said in so many words. errors.Is and errors.As still reach
// the cause.
func openFailed(path string, existing bool, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	msg := pe.Err.Error()
	if errors.Is(pe.Err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			msg = "directory " + dir + " does not exist (the file is created, its directory is not)"
			if existing {
				msg = "directory " + dir + " does not exist"
			}
		} else if existing {
			msg = "no such file"
		}
	}
	return &openError{path: path, msg: msg, err: err}
}

// openError is what openFailed returns for an error about the path itself.
type openError struct {
	path, msg string
	err       error
}

func (e *openError) Error() string { return "sqlite: open " + e.path + ": " + e.msg }
func (e *openError) Unwrap() error { return e.err }
