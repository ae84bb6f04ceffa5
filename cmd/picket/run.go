package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// DefaultGrace is how long "picket run" waits after SIGTERM before it sends
// SIGKILL to a command whose lease could not be renewed. A TTL too short for
// it shrinks it (see maxGrace).
const DefaultGrace = 10 * time.Second

// probeTimeout bounds the one extra attempt "picket run -wait" makes when
// the wait ran out without any answer from the store (see takeLease).
const probeTimeout = time.Second

// maxTryTimeout bounds the wait for the answer to a single attempt (no
// -wait); see tryTimeout.
const maxTryTimeout = 10 * time.Second

// runRun is "picket run": a distributed flock(1). It holds the lease while
// the command runs and stops the command before the lease can end.
func runRun(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "run")
	var sf storeFlags
	sf.register(fs)
	nameF := nameFlag(fs)
	setUsage(fs, "NAME [flags] -- CMD [ARGS...]")
	ttl := fs.Duration("ttl", 30*time.Second, "the lease's time to live; it is renewed at about a third of it")
	wait := fs.Duration("wait", 0, "how long to wait for the lease (0: give up at once if it is held)")
	grace := fs.Duration("grace", DefaultGrace, "after SIGTERM to a command whose lease cannot be renewed, wait this long before SIGKILL (shrunk to fit a short -ttl)")
	owner := fs.String("owner", lease.DefaultOwner(), "a label for people: who holds the lease")
	conflict := fs.Int("conflict-exit-code", exitHeld, "the exit `status` when the name is held by someone else (flock's -E)")
	name, argv, err := leaseName(fs, args, nameF, true, false)
	if err != nil {
		return err
	}
	switch {
	case len(argv) == 0:
		return usagef("run: want NAME and a command: picket run NAME [flags] -- CMD ARGS... (the name taken: %q, no command)", name)
	case *wait < 0 || *grace < 0:
		return usagef("run: -wait and -grace must not be negative")
	case *conflict < 0 || *conflict > 255:
		return usagef("run: -conflict-exit-code must be between 0 and 255")
	}
	if err := storekit.ValidateTTL(*ttl); err != nil {
		return usagef("run: -ttl: %v", err)
	}
	g, err := graceFor(*ttl, *grace, flagSet(fs, "grace"))
	if err != nil {
		return err
	}
	path, err := lookCommand(argv[0])
	if err != nil {
		return err
	}
	// Signals are ours from the start: before the lease is granted they
	// cancel the wait; afterwards they go to the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	s, err := sf.open(fs)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) || sf.server != "" {
			return err // flags, or the auth token file: nothing was asked of the store
		}
		return &exitStatus{exitUnavailable, fmt.Errorf("run: %w", err)}
	}
	defer s.Close()

	renewals := &lastError{}
	m, err := lease.NewManager(s, lease.WithOwner(*owner), lease.WithLogger(renewals))
	if err != nil {
		return err
	}
	l, err := acquireForRun(ctx, m, name, *ttl, *wait, sigs, e.stderr)
	if err != nil {
		if errors.Is(err, lease.ErrHeld) {
			return &exitStatus{*conflict, err}
		}
		return err
	}
	renewals.reset() // from here on, only the renewals' errors
	l.KeepAlive()
	// Whatever happens next, give the lease back, unless it could not be
	// kept (see releaseAfterRun).
	cutOff := false
	defer func() { releaseAfterRun(l, cutOff) }()

	env := append(os.Environ(), "PICKET_LEASE="+l.Name(), "PICKET_TOKEN="+l.Token().String())
	c, err := startCommand(e, path, argv, env)
	if err != nil {
		return err
	}
	defer c.close()
	// From now on the job-control signals go to the command too, and picket
	// run stops when the command does (see child.followStop).
	signal.Notify(sigs, syscall.SIGTSTP, syscall.SIGUSR1, syscall.SIGUSR2)
	err = superviseCommand(e, l, c, g, sigs, renewals)
	var st *exitStatus
	cutOff = errors.As(err, &st) && st.code == exitLost
	return err
}

// releaseTimeout bounds the release of a lease picket run still holds.
const releaseTimeout = 5 * time.Second

// releaseAfterRun gives the lease back when the command is done. A lease that
// could not be kept (cutOff: lost, or renewals failing until the command was
// stopped) is not asked for: the store did not answer the renewals, or said
// the lease is gone, so a release would only wait releaseTimeout for an
// answer that is not coming, and the store's copy ends at its expiry anyway.
// Release is still called, with a context already done, to stop the renewals.
func releaseAfterRun(l *lease.Lease, cutOff bool) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	if cutOff || leaseLost(l) != nil {
		cancel()
	}
	defer cancel()
	_ = l.Release(ctx)
}

// superviseCommand waits for the command to exit, passing signals on and
// stopping it on the schedule of stopSchedule when the lease cannot be kept.
func superviseCommand(e *env, l *lease.Lease, c *child, grace time.Duration, sigs <-chan os.Signal, renewals *lastError) error {
	sched := stopSchedule{grace: grace, margin: killMargin(l.TTL())}
	timer := time.NewTimer(0)
	defer timer.Stop()
	leaseDone := l.Context().Done()
	var stopped error // why the command is being stopped; nil while it is not
	for {
		select {
		case st := <-c.exited:
			if stopped != nil {
				return &exitStatus{exitLost, fmt.Errorf("run: %v (the command %s)", stopped, st)}
			}
			if lostErr := leaseLost(l); lostErr != nil {
				// The command finished, but the lease ended under it:
				// whatever it wrote after that was not protected by the
				// lease. Say so rather than pass its status on.
				return &exitStatus{exitLost, fmt.Errorf("run: %v (the command %s)", lostErr, st)}
			}
			return st.exitStatus()
		case sig := <-sigs:
			c.signal(sig.(syscall.Signal))
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				c.signal(syscall.SIGCONT) // a stopped command must see them
			}
		case sig := <-c.stopped:
			if !c.followStop(sig) {
				continue
			}
			// picket run was stopped with the command and is continued
			// now; the lease may have ended meanwhile.
			if lostErr := leaseLost(l); lostErr != nil {
				if stopped == nil {
					stopped = lostErr
					fmt.Fprintf(e.stderr, "picket: run: %v; killing the command\n", stopped)
				}
				c.signal(syscall.SIGKILL)
				continue
			}
			c.resume()
		case <-leaseDone:
			leaseDone = nil // closed for good: only the timer looks at the lease from now on
			resetTimer(timer, 0)
		case <-timer.C:
			now := time.Now()
			act, next := sched.next(now, l)
			switch act {
			case actKill:
				if stopped == nil {
					stopped = stopReason(l, renewals)
					fmt.Fprintf(e.stderr, "picket: run: %v; killing the command\n", stopped)
				}
				c.signal(syscall.SIGKILL)
			case actTerm:
				stopped = stopReason(l, renewals)
				fmt.Fprintf(e.stderr, "picket: run: %v; stopping the command (SIGTERM, SIGKILL in %v)\n",
					stopped, next.Sub(now).Round(time.Millisecond))
				c.signal(syscall.SIGTERM)
				c.signal(syscall.SIGCONT)
			}
			if !next.IsZero() {
				resetTimer(timer, next.Sub(now))
			}
		}
	}
}

// stopReason says why the command is being stopped.
func stopReason(l *lease.Lease, renewals *lastError) error {
	if err := leaseLost(l); err != nil {
		return err
	}
	if last := renewals.get(); last != nil {
		return fmt.Errorf("%w: %q could not be renewed before its local deadline (last error: %v)", lease.ErrLost, l.Name(), last)
	}
	return fmt.Errorf("%w: %q could not be renewed before its local deadline", lease.ErrLost, l.Name())
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(max(d, 0))
}

// acquireForRun takes the lease, waiting up to wait; a signal cancels the
// wait.
func acquireForRun(ctx context.Context, m *lease.Manager, name string, ttl, wait time.Duration, sigs <-chan os.Signal, progress io.Writer) (*lease.Lease, error) {
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
	l, err := takeLease(ctx, m, name, ttl, wait, progress, "run")
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

// takeLease acquires name through m: one try when wait is zero (bounded by
// tryTimeout), otherwise waiting up to wait. Its errors say what is known of the name: one
// matching lease.ErrHeld only when the store said the name is held, one
// matching lease.ErrUnavailable when the store could not be reached or
// refused to grant (for the whole wait, if there was one).
//
// A wait can run out inside a store's own wait, with no answer at all; that
// says nothing of the name, so takeLease then asks once more without
// waiting, for at most probeTimeout, and reports that answer (or the lease,
// if the name came free just then).
//
// With a wait and a progress writer, takeLease says on it, as "picket: cmd:
// ...", when it starts waiting (the name is held, by whom and until when) and
// when it gets the lease after a wait.
func takeLease(ctx context.Context, m *lease.Manager, name string, ttl, wait time.Duration, progress io.Writer, cmd string, opts ...lease.AcquireOption) (got *lease.Lease, _ error) {
	if wait == 0 {
		d := tryTimeout(ttl)
		tctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		l, err := m.TryAcquire(tctx, name, ttl, opts...)
		if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%w: no answer from the store within %v: %w", lease.ErrUnavailable, d, err)
		}
		return l, err
	}
	start := time.Now()
	if progress != nil {
		// One try first, to say whether there is anything to wait for
		// (flock --verbose, consul lock -verbose).
		tctx, cancel := context.WithTimeout(ctx, min(tryTimeout(ttl), wait))
		l, err := m.TryAcquire(tctx, name, ttl, opts...)
		cancel()
		var held *lease.HeldError
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, err
		case errors.As(err, &held):
			fmt.Fprintf(progress, "picket: %s: %q is held by %q until %s; waiting up to %v\n",
				cmd, name, held.Owner, held.Expires.Local().Format(time.TimeOnly), wait)
		case errors.Is(err, lease.ErrHeld):
			fmt.Fprintf(progress, "picket: %s: %q is held; waiting up to %v\n", cmd, name, wait)
		default:
			fmt.Fprintf(progress, "picket: %s: %q: %v; waiting up to %v\n", cmd, name, err, wait)
		}
		defer func() {
			if got != nil {
				fmt.Fprintf(progress, "picket: %s: got %q (token %d) after %v\n",
					cmd, name, got.Token(), time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	wctx, cancel := context.WithTimeout(ctx, time.Until(start.Add(wait)))
	defer cancel()
	l, err := m.Acquire(wctx, name, ttl, opts...)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return l, err
	}
	if errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrUnavailable) {
		return nil, fmt.Errorf("not granted within %v: %w", wait, err)
	}
	pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
	defer pcancel()
	l, perr := m.TryAcquire(pctx, name, ttl, opts...)
	switch {
	case perr == nil:
		return l, nil
	case errors.Is(perr, lease.ErrHeld), errors.Is(perr, lease.ErrUnavailable):
		return nil, fmt.Errorf("not granted within %v: %w", wait, perr)
	case errors.Is(perr, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("not granted within %v: %w: no answer from the store: %w", wait, lease.ErrUnavailable, perr)
	}
	return nil, perr
}

// tryTimeout bounds a single attempt (no -wait): a store that never answers
// must not hang a cron job for good, and a grant that arrives after half its
// TTL leaves little of it.
func tryTimeout(ttl time.Duration) time.Duration {
	return max(min(ttl/2, maxTryTimeout), probeTimeout)
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

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// lastError is a log.Logger for the lease's Manager that keeps the last
// error logged (a failed renewal, say) and prints nothing: picket run says
// what matters when it stops the command.
type lastError struct {
	mu  sync.Mutex
	err error
}

func (l *lastError) Log(keyvals ...any) error {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "err" {
			if err, ok := keyvals[i+1].(error); ok {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
			}
		}
	}
	return nil
}

func (l *lastError) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = nil
}

func (l *lastError) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
