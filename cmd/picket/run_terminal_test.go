package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the master, and the slave's path.
func openPTY(t testing.TB) (*os.File, string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	return m, "/dev/pts/" + strconv.Itoa(int(n))
}

// terminalRun is a picket run started as a terminal session would start it:
// the session leader of a new session whose controlling terminal is a pty,
// with stdin, stdout and stderr on it, in the foreground.
type terminalRun struct {
	cmd    *exec.Cmd
	master *os.File
	out    *syncBuffer // everything the terminal showed
	done   chan struct{}
}

func startTerminalRun(t *testing.T, args ...string) *terminalRun {
	t.Helper()
	master, slavePath := openPTY(t)
	slave, err := os.OpenFile(slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	cmd := picket(t, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &terminalRun{cmd: cmd, master: master, out: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.out.WriteString(string(buf[:n]))
			if err != nil {
				return
			}
		}
	}()
	go func() {
		cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.done
	})
	return r
}

// waitOutput waits until the terminal has shown s.
func (r *terminalRun) waitOutput(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q within 30s; it showed:\n%q\npicket run's state: %s",
				s, r.out.String(), procState(r.cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *terminalRun) write(t *testing.T, s string) {
	t.Helper()
	if _, err := r.master.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits for picket run to exit and returns its status.
func (r *terminalRun) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("picket run did not exit within 30s (state %s); the terminal showed:\n%q",
			procState(r.cmd.Process.Pid), r.out.String())
	}
	return r.cmd.ProcessState.ExitCode()
}

// procState returns the state letter of /proc/PID/stat (R, S, T, Z...), or
// "gone".
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "?"
	}
	return s[i+2 : i+3]
}

// TestRunTerminal runs picket run on a real pseudo-terminal, in the
// foreground of its session, as a shell would: the command can read the
// terminal, ^C reaches it, and ^Z stops the job until it is continued.
// Before, the command ran in a background process group, so reading the
// terminal stopped it with SIGTTIN and the job hung for good.
func TestRunTerminal(t *testing.T) {
	t.Run("reads the terminal", func(t *testing.T) {
		r := startTerminalRun(t, "run", "-db", tempDB(t), "-name", "tty", "--",
			"sh", "-c", `echo ready; read line; echo "got:$line"`)
		r.waitOutput(t, "ready")
		r.write(t, "hello\n")
		r.waitOutput(t, "got:hello")
		if code := r.exitCode(t); code != 0 {
			t.Errorf("exit %d, want 0; the terminal showed:\n%q", code, r.out.String())
		}
	})

	t.Run("^C reaches the command", func(t *testing.T) {
		r := startTerminalRun(t, "run", "-db", tempDB(t), "-name", "tty", "--",
			"sh", "-c", `echo ready; read line; echo "got:$line"`)
		r.waitOutput(t, "ready")
		r.write(t, "\x03") // VINTR
		if code := r.exitCode(t); code != 128+int(syscall.SIGINT) {
			t.Errorf("exit %d, want %d (the command killed by SIGINT); the terminal showed:\n%q",
				code, 128+int(syscall.SIGINT), r.out.String())
		}
	})

	t.Run("^Z stops the job, SIGCONT resumes it", func(t *testing.T) {
		r := startTerminalRun(t, "run", "-db", tempDB(t), "-name", "tty", "--",
			"sh", "-c", `echo ready; read line; echo "got:$line"`)
		r.waitOutput(t, "ready")
		r.write(t, "\x1a") // VSUSP
		pid := r.cmd.Process.Pid
		waitFor(t, 30*time.Second, "picket run to stop with its command", func() bool { return procState(pid) == "T" })
		// What a shell's fg does: picket run's group has the terminal
		// again (picket run took it back before stopping), so a SIGCONT
		// lets it hand the terminal back to the command.
		syscall.Kill(pid, syscall.SIGCONT)
		waitFor(t, 30*time.Second, "picket run to resume", func() bool { return procState(pid) != "T" })
		r.write(t, "again\n")
		r.waitOutput(t, "got:again")
		if code := r.exitCode(t); code != 0 {
			t.Errorf("exit %d, want 0; the terminal showed:\n%q", code, r.out.String())
		}
	})

	t.Run("^Z past the TTL: the command is killed, never continued", func(t *testing.T) {
		r := startTerminalRun(t, "run", "-db", tempDB(t), "-name", "tty", "-ttl", "1s", "--",
			"sh", "-c", `echo ready; read line; echo "got:$line"`)
		r.waitOutput(t, "ready")
		r.write(t, "\x1a")
		pid := r.cmd.Process.Pid
		waitFor(t, 30*time.Second, "picket run to stop with its command", func() bool { return procState(pid) == "T" })
		time.Sleep(1500 * time.Millisecond) // past the TTL: the lease is lost
		r.write(t, "late\n")                // what the command would read if it went on
		syscall.Kill(pid, syscall.SIGCONT)
		if code := r.exitCode(t); code != exitLost {
			t.Errorf("exit %d, want %d; the terminal showed:\n%q", code, exitLost, r.out.String())
		}
		if strings.Contains(r.out.String(), "got:late") {
			t.Errorf("the command went on after its lease was lost; the terminal showed:\n%q", r.out.String())
		}
	})

	t.Run("lease lost: the command and its children are killed", func(t *testing.T) {
		dir := t.TempDir()
		pids := filepath.Join(dir, "pids")
		r := startTerminalRun(t, "run", "-db", filepath.Join(dir, "picket.db"), "-name", "tty", "-ttl", "1s", "--",
			"sh", "-c", `sleep 1000 & echo "$$ $!" > "$1"; echo ready; read line; echo "got:$line"`, "sh", pids)
		r.waitOutput(t, "ready")
		pid := r.cmd.Process.Pid
		// Pause picket run past the TTL: when it wakes, its lease is lost.
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGCONT)
		if code := r.exitCode(t); code != exitLost {
			t.Errorf("exit %d, want %d; the terminal showed:\n%q", code, exitLost, r.out.String())
		}
		for _, p := range strings.Fields(readFile(t, pids)) {
			n, _ := strconv.Atoi(p)
			waitFor(t, 10*time.Second, "process "+p+" to be gone", func() bool {
				st := procState(n)
				return st == "gone" || st == "Z"
			})
		}
	})
}
