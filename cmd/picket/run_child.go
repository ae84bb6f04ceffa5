package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

// The command of "picket run", as a child process.
//
// It runs in a process group of its own, so that picket run can signal it
// and everything it started at once (kill(-pgid)). That alone would leave it
// in the background of the terminal, where reading stdin stops it with
// SIGTTIN; so, as under flock(1), picket run hands it the terminal: when
// picket run is the foreground process group of its controlling terminal,
// the command's group becomes the foreground one (and gets ^C and ^Z), and
// gets it back when it exits. When the command stops for job control (^Z,
// SIGTTIN), picket run takes the terminal back and stops itself, so that the
// shell sees the job stopped; when continued (fg or bg) it gives the terminal
// back if it is in the foreground again and continues the command.
//
// The command dies with picket run: it is started with the Linux
// parent-death signal set to SIGKILL. The kernel sends that signal when the
// thread that forked the child exits, not the process, so the fork happens
// on a goroutine locked to its OS thread, which stays locked (and so alive)
// until the child has been reaped. The race where picket run dies between
// the fork and the prctl is closed by Go's own fork code: after the prctl
// the child compares getppid() with the pid the parent had before the fork
// and kills itself if they differ. What the parent-death signal does not
// cover: the command's own children (they are not picket run's children; a
// kill -9 of picket run leaves them to finish), and a set-user-ID or
// file-capability binary, for which the kernel clears the setting at exec.

// child is a running command.
type child struct {
	pid     int
	tty     *os.File // the controlling terminal, or nil
	stopped chan syscall.Signal
	exited  chan commandEnd
	cont    chan os.Signal // SIGCONT to picket run
	closeIO func()
}

// commandEnd is how the command ended.
type commandEnd struct{ ws syscall.WaitStatus }

func (c commandEnd) String() string {
	if c.ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(c.ws.Signal()), c.ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", c.ws.ExitStatus())
}

// exitStatus is picket run's exit status for the command's end: its own
// exit status, or 128+N if signal N killed it.
func (c commandEnd) exitStatus() error {
	switch {
	case c.ws.Signaled():
		return &exitStatus{code: 128 + int(c.ws.Signal())}
	case c.ws.ExitStatus() != 0:
		return &exitStatus{code: c.ws.ExitStatus()}
	}
	return nil
}

// lookCommand finds the command as a shell would: 127 when it is not found,
// 126 when it cannot be executed.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil, errors.Is(err, exec.ErrDot) && path != "":
		return path, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", &exitStatus{exitCommandNotFound, fmt.Errorf("run: %s: command not found", name)}
	}
	return "", &exitStatus{exitNotExecutable, fmt.Errorf("run: %s: cannot execute: %v", name, err)}
}

// startCommand starts the command with the lease's environment.
func startCommand(e *env, path string, argv, env []string) (*child, error) {
	files, closeIO := stdio(e)
	c := &child{
		stopped: make(chan syscall.Signal, 1),
		exited:  make(chan commandEnd, 1),
		cont:    make(chan os.Signal, 1),
		closeIO: closeIO,
	}
	signal.Notify(c.cont, syscall.SIGCONT)
	// The controlling terminal, if any, and whether picket run is in its
	// foreground: then the command gets it.
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY, 0); err == nil {
		c.tty = tty
	}
	foreground := c.tty != nil && c.foreground()
	started := make(chan error, 1)
	go c.fork(path, argv, env, files, foreground, started)
	if err := <-started; err != nil {
		c.close()
		code := exitNotExecutable
		if errors.Is(err, syscall.ENOENT) {
			code = exitCommandNotFound
		}
		return nil, &exitStatus{code, fmt.Errorf("run: %s: %w", argv[0], err)}
	}
	if c.tty != nil {
		// Taking the terminal back from the background must not stop
		// picket run. Not before the fork: an ignored signal stays
		// ignored across exec, and the command must not inherit that.
		signal.Ignore(syscall.SIGTTOU)
	}
	return c, nil
}

// fork starts the command and waits for it, on one locked OS thread that
// lives until the command has been reaped (see the parent-death signal
// above). It reports the start on started, job-control stops on c.stopped
// and the end on c.exited.
func (c *child) fork(path string, argv, env []string, files []uintptr, foreground bool, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if foreground {
		attr.Foreground, attr.Ctty = true, int(c.tty.Fd())
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: files, Sys: attr})
	if err != nil {
		started <- err
		return
	}
	c.pid = pid
	guard, err := startGuard(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		reap(pid)
		started <- fmt.Errorf("starting the guard: %w", err)
		return
	}
	defer stopGuard(guard)
	started <- nil
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			// Cannot happen for our own child; report it as killed.
			c.exited <- commandEnd{ws: syscall.WaitStatus(syscall.SIGKILL)}
			return
		case ws.Stopped():
			c.stopped <- ws.StopSignal()
			continue
		}
		c.exited <- commandEnd{ws}
		return
	}
}

// reap waits for pid to exit.
func reap(pid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) {
	_ = syscall.Kill(-c.pid, sig)
}

// followStop is called when the command stopped with sig. A stop for job
// control (^Z, reading or writing the terminal from the background), or any
// stop while the command has the terminal, stops picket run's process group
// too, as the shell expects of a job: it sees the job stopped, and continues
// it with fg or bg. followStop returns once picket run has been continued,
// and reports whether it stopped at all: a SIGSTOP from someone else to a
// command without the terminal (under cron, say) pauses the command only.
// The caller then decides whether the command may go on (resume).
func (c *child) followStop(sig syscall.Signal) bool {
	hasTTY := c.tty != nil && c.foregroundIs(c.pid)
	if !hasTTY && sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		return false
	}
	if hasTTY {
		c.setForeground(syscall.Getpgrp())
	}
	// The whole process group, as ^Z would have stopped it under flock(1):
	// a shell script without job control that ran picket run, or the
	// other commands of a pipeline. SIGSTOP rather than sig: the kernel
	// discards SIGTSTP, SIGTTIN and SIGTTOU sent to an orphaned process
	// group, which a session leader's is. Without a terminal there is no
	// job to stop: picket run stops alone.
	target := os.Getpid()
	if c.tty != nil {
		target = 0
	}
	// kill returns before the stop has taken effect; SIGCONT says it has
	// come and gone.
	for len(c.cont) > 0 {
		<-c.cont
	}
	_ = syscall.Kill(target, syscall.SIGSTOP)
	<-c.cont
	return true
}

// resume continues the command after followStop, giving it the terminal if
// picket run was continued in the foreground (fg) rather than in the
// background (bg).
func (c *child) resume() {
	if c.tty != nil && c.foreground() {
		c.setForeground(c.pid)
	}
	c.signal(syscall.SIGCONT)
}

// close gives the terminal back to picket run's process group if the command
// had it, and closes what startCommand opened.
func (c *child) close() {
	signal.Stop(c.cont)
	if c.tty != nil {
		if c.pid != 0 && c.foregroundIs(c.pid) {
			c.setForeground(syscall.Getpgrp())
		}
		c.tty.Close()
		signal.Reset(syscall.SIGTTOU)
	}
	c.closeIO()
}

// foreground reports whether picket run's process group is the terminal's
// foreground group.
func (c *child) foreground() bool { return c.foregroundIs(syscall.Getpgrp()) }

func (c *child) foregroundIs(pgid int) bool {
	var fg int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, c.tty.Fd(), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&fg)))
	return errno == 0 && int(fg) == pgid
}

func (c *child) setForeground(pgid int) {
	pg := int32(pgid)
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, c.tty.Fd(), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pg)))
}

// stdio returns the command's stdin, stdout and stderr as descriptors: the
// env's own files, or pipes copied to and from it.
func stdio(e *env) ([]uintptr, func()) {
	var (
		fds     []uintptr
		closers []func()
	)
	for i, s := range []any{e.stdin, e.stdout, e.stderr} {
		if f, ok := s.(*os.File); ok {
			fds = append(fds, f.Fd())
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			fds = append(fds, ^uintptr(0)) // closed in the child
			continue
		}
		if i == 0 {
			fds = append(fds, r.Fd())
			go func() { io.Copy(w, s.(io.Reader)); w.Close() }()
			closers = append(closers, func() { r.Close() })
			continue
		}
		fds = append(fds, w.Fd())
		done := make(chan struct{})
		go func() { io.Copy(s.(io.Writer), r); close(done) }()
		closers = append(closers, func() { w.Close(); <-done; r.Close() })
	}
	return fds, func() {
		for _, c := range closers {
			c()
		}
	}
}
