package childtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() {
	// orphan-parent starts orphan-sleeper as Command would (orphanGuard),
	// prints its pid and waits to be killed.
	Register("orphan-parent", func() int {
		exe, err := os.Executable()
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		cmd := exec.Command(exe, noTests)
		cmd.Env = append(os.Environ(), Var+"=orphan-sleeper")
		cmd.SysProcAttr = orphanGuard(nil)
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	})
	Register("orphan-sleeper", func() int {
		time.Sleep(time.Hour)
		return 0
	})
}

// TestOrphanDies: a child started through this package dies with the
// process that started it (a go test -timeout panic, a kill -9), instead of
// living on with the test's pipes. A child kills -9 the grandchild's parent
// and the grandchild must be gone within 10 s. Its mutant (.ci/mutants):
// testdata/controls/orphan-lives, no parent-death signal.
func TestOrphanDies(t *testing.T) {
	p := Start(t, t.Context(), "orphan-parent", Options{})
	line, err := p.Line(30 * time.Second)
	if err != nil {
		t.Fatalf("the parent's line: %v", err)
	}
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("the parent said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // when the check fails
	if !alive(pid) {
		t.Fatalf("the grandchild %d is not running before its parent dies", pid)
	}
	p.Kill()
	p.Wait(30 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the grandchild %d outlived its parent by 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (not gone, not a zombie awaiting its
// reaper).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
