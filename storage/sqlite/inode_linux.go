package sqlite

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The lock layout on the database file (see inode.go). SQLite locks bytes
// 0x40000000 to 0x400001ff; these are 2^62 and above, where no file reaches.
const (
	lockGate  int64 = 1 << 62       // the gate: one byte
	lockSlots int64 = 1<<62 + 1<<20 // the first slot byte
	slotSpan  int64 = 1 << 60       // slots: one byte per WAL identity
	gatePoll        = 2 * time.Millisecond
)

type inodeKey struct{ dev, ino uint64 }

func fileIdentity(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev, st.Ino
	}
	return 0, 0
}

// inodeFile is this process's descriptor of one database inode, shared by
// every Store of the process on it and closed when the last one closes.
type inodeFile struct {
	key     inodeKey
	f       *os.File
	refs    int    // Stores of this process that joined
	wal     walID  // the WAL they all use
	walPath string // the path they gave SQLite
	slot    int64  // the byte read-locked for them
}

// inodes is every database inode the process has open. Its mutex is held
// while a Store joins or leaves a file, so the process's Stores join and
// leave one at a time (the gate lock cannot order them: they share one
// open file description, and a description never conflicts with itself).
var inodes = struct {
	sync.Mutex
	m map[inodeKey]*inodeFile
}{m: map[inodeKey]*inodeFile{}}

// member is one Store's place among the openers of its file.
type member struct {
	path   string // the resolved path SQLite opens
	file   *inodeFile
	gate   bool // the gate is held
	locked bool // inodes is locked by this member
	joined bool // counted in file.refs
}

// enterFile starts joining the openers of the file at path (resolved, and
// existing): it locks the process's table of files, opens (or finds) the
// process's descriptor of the inode, which the file must allow writing, and
// takes the gate, waiting up to busy for another process joining or
// leaving. The caller opens SQLite, calls join, and always calls exit.
func enterFile(path string, busy time.Duration) (*member, error) {
	m := &member{path: path}
	inodes.Lock()
	m.locked = true
	fi, err := os.Stat(path)
	if err != nil {
		return m, err
	}
	dev, ino := fileIdentity(fi)
	key := inodeKey{dev, ino}
	file := inodes.m[key]
	if file == nil {
		// Opening for writing is also the check that the file is writable:
		// a read-only file would open, answer reads and refuse every grant.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return m, readOnlyError(path, err)
		}
		file = &inodeFile{key: key, f: f}
		if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
			// Replaced under us. Closing f could drop POSIX locks this
			// process holds on the new file, so keep it open until exit.
			m.file = file
			return m, fmt.Errorf("%s was replaced while opening it", path)
		}
		inodes.m[key] = file
	} else if err := writableNoFD(path); err != nil {
		return m, err
	}
	m.file = file
	if err := m.takeGate(busy); err != nil {
		return m, err
	}
	// Before any connection of this Store reads the file through a second
	// WAL (reading the pages of another opener's checkpoint half done, or,
	// in this process, SQLite's shared memory of another path), prove what
	// can be proved already: the -wal and -shm that exist now must be the
	// live openers'. join proves it again once SQLite opened them.
	_, err = m.prove()
	return m, err
}

// takeGate write-locks the gate byte, polling up to busy, unless the
// process holding it is stopped (gate_linux.go).
func (m *member) takeGate(busy time.Duration) error {
	start := time.Now()
	checked := false // for a stopped holder
	for {
		err := m.setLock(unix.F_WRLCK, lockGate, 1)
		if err == nil {
			m.gate = true
			return nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("lock the gate of %s: %w", m.path, err)
		}
		if time.Since(start) >= busy {
			return fmt.Errorf("another process kept %s's gate locked (joining or leaving it) for %v", m.path, busy)
		}
		if !checked && time.Since(start) >= gateStallCheck {
			checked = true
			if err := stoppedGateHolder(m.file.f, m.path); err != nil { // gate_linux.go
				return err
			}
		}
		time.Sleep(gatePoll)
	}
}

func (m *member) setLock(typ int16, start, n int64) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
	return unix.FcntlFlock(m.file.f.Fd(), unix.F_OFD_SETLK, &lk)
}

// lockedByOthers reports whether another open file description holds a lock
// on any byte of [start, start+n).
func (m *member) lockedByOthers(start, n int64) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := unix.FcntlFlock(m.file.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("query the locks of %s: %w", m.path, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// join proves that the Store uses the WAL of every other live opener of the
// file, and counts it among them. SQLite must have opened the -wal and -shm
// already (a read does). first reports whether no other opener was live.
func (m *member) join() (first bool, err error) {
	id, err := m.prove()
	if err != nil {
		return false, err
	}
	f := m.file
	if f.refs > 0 {
		f.refs++
		m.joined = true
		return false, nil
	}
	if id == "" {
		return false, fmt.Errorf("find the -wal and -shm SQLite opened beside %s", m.path)
	}
	slot := lockSlots + slotOf(id)
	shared, err := m.lockedByOthers(slot, 1)
	if err != nil {
		return false, err
	}
	if err := m.setLock(unix.F_RDLCK, slot, 1); err != nil {
		return false, fmt.Errorf("lock %s: %w", m.path, err)
	}
	f.refs, f.wal, f.walPath, f.slot = 1, id, m.path, slot
	m.joined = true
	return !shared, nil
}

// prove checks that the -wal and -shm beside the Store's path are those of
// every live opener of the file: the other Stores of this process, and the
// processes holding a slot. It returns their identity ("" if they do not
// exist, which is a proof only while no one else has the file open).
func (m *member) prove() (walID, error) {
	id, idErr := statWAL(m.path)
	if idErr != nil {
		id = ""
	}
	f := m.file
	if f.refs > 0 {
		if id == "" || id != f.wal {
			return "", otherWALError(m.path, fmt.Sprintf(
				"this process has it open as %s, with %s-wal; this Store opened it as %s", f.walPath, f.walPath, m.path))
		}
		return id, nil
	}
	if id == "" {
		if busy, err := m.lockedByOthers(lockSlots, slotSpan); err != nil || busy {
			return "", otherWALError(m.path, "another process has it open with its -wal elsewhere (none is beside "+m.path+")")
		}
		return "", nil
	}
	slot := lockSlots + slotOf(id)
	below, err := m.lockedByOthers(lockSlots, slot-lockSlots)
	if err != nil {
		return "", err
	}
	above, err := m.lockedByOthers(slot+1, lockSlots+slotSpan-slot-1)
	if err != nil {
		return "", err
	}
	if below || above {
		return "", otherWALError(m.path, fmt.Sprintf(
			"another process has it open with other -wal/-shm files than %s-wal and %s-shm", m.path, m.path))
	}
	return id, nil
}

// slotOf maps a WAL identity to its slot offset.
func slotOf(id walID) int64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64() & uint64(slotSpan-1))
}

// reenter takes the process's table and the gate again, for Close. If the
// gate stays locked for busy, it goes on without it and reports false:
// Close then skips the work only the last opener does.
func (m *member) reenter(busy time.Duration) bool {
	inodes.Lock()
	m.locked = true
	return m.takeGate(busy) == nil
}

// last reports whether this Store is the last live opener of the file. Call
// it holding the gate.
func (m *member) last() bool {
	if !m.gate || m.file.refs != 1 {
		return false
	}
	busy, err := m.lockedByOthers(lockSlots, slotSpan)
	return err == nil && !busy
}

// exit ends a join or a leave: it leaves the openers if Close asked so
// (leaving, after every SQLite connection of the Store is closed), releases
// the gate, and unlocks the process's table. The descriptor is closed with
// the last Store of the process on the file, or when a join failed first.
func (m *member) exit(leaving bool) {
	if m == nil { // Open failed before it joined (the directory is missing, say)
		return
	}
	if m.file != nil {
		m.exitFile(leaving)
	}
	if m.locked {
		m.locked = false
		inodes.Unlock()
	}
}

func (m *member) exitFile(leaving bool) {
	f := m.file
	if m.joined && leaving {
		f.refs--
		m.joined = false
	}
	if m.gate {
		m.setLock(unix.F_UNLCK, lockGate, 1)
		m.gate = false
	}
	if f.refs == 0 && !m.joined {
		// No Store of this process has SQLite connections on the file any
		// more, so closing the descriptor drops no lock SQLite relies on.
		if inodes.m[f.key] == f {
			delete(inodes.m, f.key)
		}
		f.f.Close()
	}
}

// readOnlyError explains why the file cannot be opened for writing.
func readOnlyError(path string, err error) error {
	if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w: %s: %v; picket writes every grant, so it needs a writable file "+
			"(check the mount, the file's mode and attributes)", ErrReadOnly, path, errors.Unwrap(err))
	}
	return err
}

// writableNoFD checks writability without a descriptor to keep: access(2)
// with W_OK, and the file system's read-only flag (root passes W_OK on a
// read-only mount's files only through statfs).
func writableNoFD(path string) error {
	if err := unix.Access(path, unix.W_OK); err != nil {
		return readOnlyError(path, &fs.PathError{Op: "access", Path: path, Err: err})
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return readOnlyError(path, &fs.PathError{Op: "statfs", Path: path, Err: unix.EROFS})
	}
	return nil
}

// walMark names the -wal beside path for the in-use mark (files.go): its
// inode number and birth time, which stay the same across reboots and
// remounts (a device number may not) and differ for a new file that reuses
// the number. Empty if the file system keeps no birth time.
func walMark(path string) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path+"-wal", 0, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return ""
	}
	if st.Mask&unix.STATX_BTIME == 0 {
		return ""
	}
	return fmt.Sprintf("ino=%d born=%d.%09d", st.Ino, st.Btime.Sec, st.Btime.Nsec)
}
