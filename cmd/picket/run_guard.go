package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// The guard of "picket run".
//
// The parent-death signal kills the command when picket run dies, but not
// what the command started: those processes are not picket run's children.
// So picket run also starts a guard, a second copy of its own binary in a
// process group of its own, whose parent-death signal is SIGWINCH (ignored by
// default, so a death before the guard is ready is not lost: the guard
// checks its parent first). When picket run dies, the guard kills the
// command's whole process group and exits. When the command ends, picket run
// kills the guard.
//
// SIGWINCH is also what a terminal sends on a resize, but only to its
// foreground process group, which the guard's never is; a stray one changes
// nothing, since the guard acts only once its parent is gone.

// runGuardCommand is the hidden subcommand that runs the guard:
// "picket <runGuardCommand> PGID PPID".
const runGuardCommand = "internal-run-guard"

// runGuard kills process group pgid as soon as its parent is no longer ppid.
func runGuard(args []string) error {
	if len(args) != 2 {
		return usagef("%s PGID PPID", runGuardCommand)
	}
	pgid, err1 := strconv.Atoi(args[0])
	ppid, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || pgid <= 1 {
		return usagef("%s PGID PPID: bad arguments %q", runGuardCommand, args)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	for {
		if os.Getppid() != ppid {
			if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
				return fmt.Errorf("run guard: kill process group %d: %w", pgid, err)
			}
			return nil
		}
		<-sigs
	}
}

// startGuard starts the guard of process group pgid. It must run on the
// locked OS thread that forked the command, which lives until the command has
// been reaped: the guard's parent-death signal is tied to that thread too.
func startGuard(pgid int) (int, error) {
	// The running binary itself, even if an upgrade replaced or removed
	// the file since: in the forked child, /proc/self/exe is still ours.
	const self = "/proc/self/exe"
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	argv := []string{os.Args[0], runGuardCommand, strconv.Itoa(pgid), strconv.Itoa(os.Getpid())}
	fd := null.Fd()
	return syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{fd, fd, fd},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGWINCH},
	})
}

// stopGuard kills the guard and reaps it.
func stopGuard(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
	reap(pid)
}
