package sqlite

import "golang.org/x/sys/unix"

// fileHere identifies the file at a path: device and inode.
type fileHere struct{ dev, ino uint64 }

// notePlace remembers which file the store's path names, at Open.
func (s *Store) notePlace() error {
	var st unix.Stat_t
	if err := unix.Stat(s.real, &st); err != nil {
		return err
	}
	s.place = fileHere{st.Dev, st.Ino}
	return nil
}

// checkPlace reports ErrMoved when the store's path no longer names the
// file it opened (moved.go). It runs on the writer goroutine before every
// batch: one stat, no allocation.
func (s *Store) checkPlace() error {
	var st unix.Stat_t
	if err := unix.Stat(s.path, &st); err != nil {
		return movedError(s.path, err)
	}
	if (fileHere{st.Dev, st.Ino}) != s.place {
		return movedError(s.path, nil)
	}
	return nil
}
