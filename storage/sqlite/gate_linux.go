package sqlite

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A stopped process holding the gate.
//
// The gate (inode.go) is held while a Store joins or leaves its file: the
// proof of one WAL, the quick check, the migration, the in-use mark. A
// process stopped there (SIGSTOP, ^Z, a debugger) would keep every other
// process's Open and Close waiting for the whole busy timeout. So once a
// wait for the gate has lasted gateStallCheck, the waiter looks for the
// holder: open file description locks carry no pid, but /proc/PID/fdinfo
// lists the locks of each descriptor. A holder that is stopped is not
// waited for: Open fails at once, naming it and the fix; Close goes on
// without the gate (files.go: it keeps its -wal, so the file stays
// openable).

// gateStallCheck is how long a wait for the gate lasts before the waiter
// looks whether its holder is stopped.
const gateStallCheck = 500 * time.Millisecond

// stoppedGateHolder returns an error naming the process that holds the
// gate of the file f, if that process is stopped; nil if it runs, or
// cannot be found.
func stoppedGateHolder(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	dev, ino := fileIdentity(fi)
	lock := fmt.Sprintf(" %02x:%02x:%d %d ", unix.Major(dev), unix.Minor(dev), ino, lockGate)
	self := os.Getpid()
	infos, _ := filepath.Glob("/proc/[0-9]*/fdinfo/*")
	for _, info := range infos {
		b, err := os.ReadFile(info)
		if err != nil || !bytes.Contains(b, []byte(lock)) || !bytes.Contains(b, []byte("OFDLCK ADVISORY  WRITE")) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(info))))
		if err != nil || pid == self {
			continue
		}
		if state := processState(pid); state == 'T' || state == 't' {
			return fmt.Errorf("process %d holds the gate of %s (it is joining or leaving the file) and is stopped "+
				"(SIGSTOP, ^Z or a debugger): not waiting for it; continue it (kill -CONT %d) or end it", pid, path, pid)
		}
		return nil
	}
	return nil
}

// processState is the state letter of /proc/PID/stat (R, S, D, T, t, Z...),
// 0 if it cannot be read.
func processState(pid int) byte {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte([]byte(line), ')')
	if i < 0 || i+2 >= len(line) {
		return 0
	}
	return line[i+2]
}

// descriptor is the process's descriptor of the file m joins: reading
// through it closes no descriptor.
func (m *member) descriptor() *os.File {
	if m == nil || m.file == nil {
		return nil
	}
	return m.file.f
}
