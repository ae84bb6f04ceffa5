package token_test

import (
	"os"
	"syscall"
)

// lockExclusive takes f's OFD write lock on byte 0, as WriteFile does.
func lockExclusive(f *os.File) error {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 0, Len: 1}
	return syscall.FcntlFlock(f.Fd(), 37 /* F_OFD_SETLK */, &lk)
}
