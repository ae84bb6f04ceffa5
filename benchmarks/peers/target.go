package peers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// A Target is one row group of the suite: a system, a way to use it, and
// how durable what it acknowledges is.
type Target struct {
	// Name identifies the target in the table, the chart and -only
	// ("redis-always", "picket-http", ...).
	Name string

	// Durability says what an acknowledged grant survives, in full (the
	// legend under the table); Short says it in a few words on every row.
	Durability, Short string

	// Baseline marks the rows that frame the others (the fsync floor, the
	// trivial HTTP handler) rather than a lock service.
	Baseline bool

	// Durable is false for rows that must be read as "not durable".
	Durable bool

	// Workloads lists the workloads that mean something for this target
	// (nil: every workload of the suite).
	Workloads []string

	// Open connects to the system for a run with up to clients concurrent
	// clients. It returns the store, a version string for the table, and a
	// function that releases what Open took.
	Open func(ctx context.Context, clients int) (s lease.Store, version string, close func() error, err error)

	// Measure, if set, replaces the lease workloads (the fsync floor): it
	// runs one step of at most d and ops operations.
	Measure func(ctx context.Context, d time.Duration, ops int64) (bench.Row, error)

	// Pid, if set, names a single-process server whose CPU time the suite
	// reports per operation.
	Pid int
}

// errUnsupported answers the lease.Store methods the workloads never call
// (Renew, Get, List) on an adapter of another system.
var errUnsupported = errors.New("peers: not supported by this adapter")

// unsupported fills in the lease.Store methods the workloads never call.
type unsupported struct{}

func (unsupported) Renew(context.Context, lease.RenewRequest) (lease.Grant, error) {
	return lease.Grant{}, errUnsupported
}

func (unsupported) Get(context.Context, string) (lease.Info, error) {
	return lease.Info{}, errUnsupported
}

func (unsupported) List(context.Context, lease.ListRequest) (lease.ListPage, error) {
	return lease.ListPage{}, errUnsupported
}

// Poll bounds: a system without a wait (Redis, PostgreSQL) is asked again
// after a random pause in [pollMin, pollMax), as lock libraries on it do.
const (
	pollMin = 1 * time.Millisecond
	pollMax = 2 * time.Millisecond
)

// pollAcquire calls try until it grants, fails, or req.Wait runs out; a
// name still held then is a *lease.HeldError. try reports a held name as
// (zero, false, nil).
func pollAcquire(ctx context.Context, req lease.AcquireRequest, try func(context.Context) (lease.Grant, bool, error)) (lease.Grant, error) {
	deadline := time.Now().Add(req.Wait)
	for {
		g, ok, err := try(ctx)
		if err != nil || ok {
			return g, err
		}
		pause := pollMin + rand.N(pollMax-pollMin)
		if time.Now().Add(pause).After(deadline) {
			return lease.Grant{}, &lease.HeldError{Name: req.Name}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return lease.Grant{}, ctx.Err()
		case <-t.C:
		}
	}
}

// grant builds the Grant an adapter returns.
func grant(req lease.AcquireRequest, tok int64) (lease.Grant, error) {
	if tok <= 0 {
		return lease.Grant{}, fmt.Errorf("peers: token %d from the store is not positive", tok)
	}
	return lease.Grant{Name: req.Name, Holder: req.Holder, Owner: req.Owner, Token: token.Token(tok), TTL: req.TTL}, nil
}

// warm calls f from n goroutines at once, so that a client's pool opens the
// connections the step's clients will use before any step measures them.
func warm(ctx context.Context, n int, f func(context.Context) error) error {
	errs := make(chan error, n)
	for range n {
		go func() { errs <- f(ctx) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
