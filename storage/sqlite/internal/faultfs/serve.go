package faultfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A process must not use the files of a FUSE mount it serves itself in any
// way that can fault on a mapped page (SQLite maps its -shm file): the
// faulting thread sleeps in the kernel, uninterruptibly, until the server
// answers, while the Go runtime may be waiting for that very thread to stop
// the world, with the server's goroutines stopped. So tests serve the mount
// from a second process, the server command in ./server (StartT), and drive
// its faults through a Remote. The server, which needs go-fuse, is a module
// of its own; this package, the client, needs nothing but the standard
// library.

// RequireEnv names the environment variable that, set to 1, turns the skip
// of StartT on a machine that cannot mount FUSE into a failure (for CI runs
// that must exercise the fault tests).
const RequireEnv = "PICKET_REQUIRE_FUSE"

// Remote controls a file system served by another process (StartT).
type Remote struct {
	dir string
	cmd *exec.Cmd

	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

// StartT starts a server (the command in ./server, a module of its own: go
// run builds it once and caches it) to serve a file system mounted under
// tb.TempDir(), and stops it when the test ends. If the machine cannot mount
// FUSE file systems (no /dev/fuse, or neither root nor fusermount), the test
// is skipped, or fails if RequireEnv is 1.
func StartT(tb testing.TB) *Remote {
	tb.Helper()
	dir := tb.TempDir() // its removal is registered first, so runs after the unmount
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("faultfs: cannot find the server's source")
	}
	r := &Remote{dir: dir, cmd: exec.Command("go", "run", ".", dir)}
	r.cmd.Dir = filepath.Join(filepath.Dir(self), "server")
	var err error
	r.cmd.Stderr = os.Stderr
	if r.in, err = r.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	r.out = bufio.NewReader(stdout)
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	line, err := r.out.ReadString('\n')
	if line != "mounted\n" {
		r.in.Close()
		r.cmd.Wait()
		msg := fmt.Sprintf("faultfs: the server said %q, %v", line, err)
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%s (%s=1)", msg, RequireEnv)
		}
		tb.Skipf("cannot mount a FUSE file system here: %s", msg)
	}
	tb.Cleanup(func() {
		if err := r.close(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

// Dir returns the mount point.
func (r *Remote) Dir() string { return r.dir }

func (r *Remote) do(command string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintln(r.in, command); err != nil {
		return "", fmt.Errorf("faultfs: %s: %w", command, err)
	}
	line, err := r.out.ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	if err != nil || strings.HasPrefix(line, "error") {
		return "", fmt.Errorf("faultfs: %s: %q, %v", command, line, err)
	}
	return line, nil
}

func (r *Remote) must(command string) string {
	line, err := r.do(command)
	if err != nil {
		panic(err) // the server died: nothing else can be trusted
	}
	return line
}

// PowerLoss is FS.PowerLoss in the server.
func (r *Remote) PowerLoss() { r.must("powerloss") }

// TornPowerLoss is FS.TornPowerLoss in the server.
func (r *Remote) TornPowerLoss(seed uint64) { r.must("tornpowerloss " + strconv.FormatUint(seed, 10)) }

// FailSync is FS.FailSync in the server.
func (r *Remote) FailSync(errno syscall.Errno) { r.must("failsync " + strconv.Itoa(int(errno))) }

// NoSpace is FS.NoSpace in the server.
func (r *Remote) NoSpace(on bool) {
	if on {
		r.must("nospace 1")
	} else {
		r.must("nospace 0")
	}
}

// Stats is FS.Stats in the server.
func (r *Remote) Stats() Stats {
	var s Stats
	if err := json.Unmarshal([]byte(r.must("stats")), &s); err != nil {
		panic(err)
	}
	return s
}

// close ends the server (it unmounts) and waits for it, killing it after
// a minute.
func (r *Remote) close() error {
	r.in.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		r.cmd.Process.Kill()
		err = errors.Join(errors.New("faultfs: the server did not stop in a minute"), <-done)
	}
	syscall.Unmount(r.dir, syscall.MNT_DETACH) // if the server could not
	if err != nil {
		return fmt.Errorf("faultfs: server: %w", err)
	}
	return nil
}
