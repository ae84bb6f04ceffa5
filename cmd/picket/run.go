package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/picketlock/picket/lease"
)

// DefaultGrace is how long "picket run" waits after SIGTERM before it sends
// SIGKILL to a command whose lease was lost.
const DefaultGrace = 10 * time.Second

// runRun is "picket run": a distributed flock(1). It holds the lease while
// the command runs and kills the command when the lease is lost.
func runRun(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "run")
	var sf storeFlags
	sf.register(fs)
	name := fs.String("name", "", "the lease `name` (required)")
	ttl := fs.Duration("ttl", 30*time.Second, "the lease's time to live; it is renewed at about a third of it")
	wait := fs.Duration("wait", 0, "how long to wait for the lease (0: give up at once if it is held)")
	grace := fs.Duration("grace", DefaultGrace, "after SIGTERM to a command whose lease was lost, wait this long before SIGKILL")
	owner := fs.String("owner", lease.DefaultOwner(), "a label for people: who holds the lease")
	if err := parse(fs, args, true); err != nil {
		return err
	}
	argv := fs.Args()
	switch {
	case *name == "":
		return usagef("run: -name is required")
	case len(argv) == 0:
		return usagef("run: no command given (picket run -name N -- CMD ARGS...)")
	case *wait < 0 || *grace < 0:
		return usagef("run: -wait and -grace must not be negative")
	}
	if err := lease.ValidateTTL(*ttl); err != nil {
		return usagef("run: -ttl: %v", err)
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()

	// Signals are ours from the start: before the lease is granted they
	// cancel the wait; afterwards they go to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	l, err := acquireForRun(ctx, lease.NewManager(s, lease.WithOwner(*owner)), *name, *ttl, *wait, sigs)
	if err != nil {
		return err
	}
	l.KeepAlive()
	// Whatever happens next, give the lease back; a lost lease answers
	// ErrLost, which changes nothing.
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Release(rctx)
	}()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.Env = append(os.Environ(),
		"PICKET_LEASE="+l.Name(),
		"PICKET_TOKEN="+l.Token().String(),
	)
	// Its own process group, so that SIGKILL reaches whatever the command
	// started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	leaseDone := l.Context().Done()
	for {
		select {
		case err := <-done:
			if lostErr := leaseLost(l); lostErr != nil {
				// The command finished, but the lease ended under it:
				// whatever it wrote after that was not protected by the
				// lease. Say so rather than pass its status on.
				return &exitStatus{exitLost, fmt.Errorf("run: %v (the command exited: %v)", lostErr, describeExit(err))}
			}
			return commandStatus(err)
		case sig := <-sigs:
			_ = syscall.Kill(-cmd.Process.Pid, sig.(syscall.Signal))
		case <-leaseDone:
			lostErr := leaseLost(l)
			if lostErr == nil {
				// Released (only this function releases, after the
				// command): stop watching a channel that stays closed.
				leaseDone = nil
				continue
			}
			fmt.Fprintf(e.stderr, "picket: run: %v; stopping the command\n", lostErr)
			stopCommand(cmd, done, *grace)
			return &exitStatus{exitLost, fmt.Errorf("run: %v", lostErr)}
		}
	}
}

// acquireForRun takes the lease, waiting up to wait; a signal cancels the
// wait.
func acquireForRun(ctx context.Context, m *lease.Manager, name string, ttl, wait time.Duration, sigs <-chan os.Signal) (*lease.Lease, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interrupted := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(interrupted)
			cancel()
		case <-ctx.Done():
		}
	}()
	l, err := takeLease(ctx, m, name, ttl, wait)
	select {
	case <-interrupted:
		if l != nil {
			l.Release(context.Background())
		}
		return nil, &exitStatus{exitInterrupted, fmt.Errorf("run: interrupted while waiting for %q", name)}
	default:
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return l, nil
}

// takeLease acquires name through m: one try when wait is zero, otherwise
// waiting up to wait. A wait that runs out is an error matching
// lease.ErrHeld, so the exit status says "not acquired".
func takeLease(ctx context.Context, m *lease.Manager, name string, ttl, wait time.Duration) (*lease.Lease, error) {
	if wait == 0 {
		return m.TryAcquire(ctx, name, ttl)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	l, err := m.Acquire(wctx, name, ttl)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %q not granted within %v", lease.ErrHeld, name, wait)
	}
	return l, err
}

// leaseLost returns why the lease ended, or nil if it is live or was
// released.
func leaseLost(l *lease.Lease) error {
	cause := l.Err()
	if cause == nil || errors.Is(cause, lease.ErrReleased) {
		return nil
	}
	return cause
}

// stopCommand sends SIGTERM to the command's process group, then SIGKILL
// after grace, and waits for it to exit.
func stopCommand(cmd *exec.Cmd, done <-chan error, grace time.Duration) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// commandStatus turns the command's end into picket's exit status: its own
// exit code, or 128+N if signal N killed it.
func commandStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitStatus{code: 128 + int(ws.Signal())}
		}
		return &exitStatus{code: ee.ExitCode()}
	}
	return fmt.Errorf("run: %w", err)
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
