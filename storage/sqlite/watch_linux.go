package sqlite

import (
	"os"

	"golang.org/x/sys/unix"
)

// openWatch returns an inotify descriptor that becomes readable whenever
// path is written, as a pollable file (so that Close ends a Read).
func openWatch(path string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "inotify_add_watch", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), "inotify:"+path), nil
}
