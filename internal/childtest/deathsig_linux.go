package childtest

import "syscall"

// orphanGuard has the kernel kill the child when this process dies (a
// panic of go test's -timeout, a kill -9), so that no child outlives the
// test binary holding its pipes, ports and files: an orphan that keeps the
// test's stdout open would keep go test waiting. A caller's own Pdeathsig
// stays; its SysProcAttr is copied, not changed. (The signal follows the
// death of the thread that started the child; the Go runtime keeps its
// threads for the life of the process unless a goroutine locked to one ends
// while locked, which the tests that use this package do not do.)
func orphanGuard(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	var c syscall.SysProcAttr
	if a != nil {
		c = *a
	}
	if c.Pdeathsig == 0 {
		c.Pdeathsig = syscall.SIGKILL
	}
	return &c
}
