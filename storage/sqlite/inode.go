package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// One database, one WAL.
//
// SQLite names the -wal and -shm files after the path it was given. Two
// paths to one database inode (a hard link, a single-file bind mount into a
// container, an overlay) give two WALs: two writers that never see each
// other's commits, and the same token handed out twice. So every Store
// proves, when it opens, that it uses the same -wal and -shm as every other
// live opener of the inode, and refuses to open otherwise.
//
// The proof uses open file description locks (fcntl F_OFD_SETLK) on the
// database file. Locks live on the inode, so every opener sees them, through
// whatever path, mount or mount namespace it came. They lie far above the
// bytes SQLite locks (0x40000000 to 0x400001ff, PENDING, RESERVED and the
// SHARED range), on bytes no file ever holds:
//
//	2^62                 the gate: held (write-locked) while a Store joins or
//	                     leaves the file, so joins and leaves never interleave
//	2^62+2^20 + h        one read-locked byte per live opener, h = a 60-bit
//	                     hash of the (device, inode) of its -wal and -shm
//
// A joining Store, holding the gate, opens its SQLite connection (which
// opens the -wal and -shm), computes h and asks the kernel (F_OFD_GETLK)
// whether any other byte of the slot range is locked. A lock there belongs
// to a live opener with another WAL: Open fails with ErrOtherWAL. Otherwise
// it read-locks its byte and keeps it until Close. Within one process every
// Store on an inode shares one descriptor (closing any descriptor of a file
// drops every POSIX lock the process holds on it, SQLite's included), kept
// open until the last of them closes, and the process compares WALs itself.

// ErrOtherWAL is returned by Open when another live opener uses the database
// file through another path, and so another WAL.
var ErrOtherWAL = errors.New("sqlite: the database file is open through another path, with another WAL")

// otherWALError says which files differ and what to do.
func otherWALError(path, why string) error {
	return fmt.Errorf("%w: %s; SQLite keeps the newest state in %s-wal beside the path it was given, "+
		"so two paths (a hard link, a single-file bind mount, a copy) would hand out the same tokens twice: "+
		"open the database through one path only; for a container, mount the directory, not the file",
		ErrOtherWAL, why, filepath.Base(path))
}

// walID names the -wal and -shm files a Store uses: their devices and inode
// numbers.
type walID string

// statWAL returns the identity of the -wal and -shm beside path (the
// resolved path SQLite uses).
func statWAL(path string) (walID, error) {
	var id walID
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			return "", err
		}
		dev, ino := fileIdentity(fi)
		id += walID(fmt.Sprintf("%s=%d:%d ", suffix, dev, ino))
	}
	return id, nil
}
