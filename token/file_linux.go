package token

import (
	"errors"
	"os"
	"syscall"
)

// Open file description locks (Linux 3.15+): owned by the open file, not
// the process, so two opens in one process exclude each other too, and
// dropped by the kernel when the last descriptor of the open file closes
// (the process dies). syscall does not name them.
const fOFDSetlk = 37 // F_OFD_SETLK

const haveOFD = true

// tryLock tries to lock f's first byte, exclusive or shared, without
// waiting: false if another open file holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	typ := int16(syscall.F_RDLCK)
	if exclusive {
		typ = syscall.F_WRLCK
	}
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 1}
	for {
		err := syscall.FcntlFlock(f.Fd(), fOFDSetlk, &lk)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
			return false, nil
		}
		return false, err
	}
}
