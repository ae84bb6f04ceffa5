package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-kit/log/level"
)

// Callbacks are what Run calls as the election goes, in the manner of
// client-go's leaderelection.LeaderCallbacks. Any of them may be nil.
type Callbacks struct {
	// OnStartedLeading runs in a goroutine of its own when the caller
	// becomes leader, with the term. ctx ends the moment leadership is lost
	// (Term.Context) or Run's context ends, whichever comes first; do the
	// leader's work under it, present t.Token() with every write, and
	// return once ctx ends: Run waits for it before it resigns or
	// campaigns again, so two terms of one Run never overlap. Returning
	// before ctx ends means the work is done: Run resigns and returns.
	OnStartedLeading func(ctx context.Context, t *Term)

	// OnStoppedLeading is called once per term, when the term has ended,
	// with the cause: an error matching ErrLost when leadership was lost (a
	// pause past the TTL, a rejected renewal, a fence's refusal, the store
	// showing another leader), ErrReleased when Run resigned. It runs on
	// Run's goroutine, before Run waits for OnStartedLeading to return.
	OnStoppedLeading func(cause error)

	// OnNewLeader is called with each new leader Run observes, this caller
	// included, in term order, from one goroutine of its own (Observe).
	OnNewLeader func(l Leader)
}

// resignTimeout bounds Run's resignation once its context has ended.
const resignTimeout = 5 * time.Second

// Run takes part in the election until ctx ends: it campaigns with value
// (see Campaign), leads with cb.OnStartedLeading, and when a term is lost it
// calls cb.OnStoppedLeading and campaigns again. When ctx ends it stops
// leading (the leader's ctx ends, Run waits for OnStartedLeading to return)
// and then resigns, freeing the name at once for the next candidate:
// client-go's ReleaseOnCancel, always on. While it runs it observes the
// election and calls cb.OnNewLeader with every new term.
//
// Unlike client-go's Run, which returns after one term, Run stays a
// candidate after a loss; cancel ctx in OnStoppedLeading to stop after one
// term. A leader whose term was lost can have written late, after its
// successor's first write, only with its old token: the fence refuses it.
//
// Run returns nil when ctx ends or when OnStartedLeading returns of its own
// accord (after resigning), and Campaign's error when campaigning fails for
// another reason (ErrInvalid, a refused credential).
func (e *Election) Run(ctx context.Context, value string, cb Callbacks) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	octx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	if cb.OnNewLeader != nil {
		leaders := e.Observe(octx)
		wg.Go(func() {
			for l := range leaders {
				cb.OnNewLeader(l)
			}
		})
	}
	for {
		t, err := e.Campaign(ctx, value)
		if ctx.Err() != nil {
			if err == nil { // granted as ctx ended: give it back
				e.resign(ctx, t)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if finished := e.lead(ctx, t, cb); finished || ctx.Err() != nil {
			return nil
		}
	}
}

// lead runs one term: OnStartedLeading under a context that ends with the
// term or with ctx, OnStoppedLeading when the term ends, and a resignation
// unless the term was lost. It reports whether OnStartedLeading returned
// while the term and ctx lasted (the work is done).
func (e *Election) lead(ctx context.Context, t *Term, cb Callbacks) (finished bool) {
	lctx, stop := context.WithCancelCause(t.Context())
	defer stop(nil)
	unhook := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	defer unhook()

	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if cb.OnStartedLeading != nil {
			cb.OnStartedLeading(lctx, t)
		} else {
			<-lctx.Done()
		}
	}()
	select {
	case <-t.Context().Done():
	case <-ctx.Done():
	case <-returned:
	}
	if t.Context().Err() != nil { // lost: tell at once, then wait for the leader to stop
		e.stopped(cb, t)
		<-returned
		e.resign(ctx, t) // asks the store anyway: a term lost to its local deadline may still be held there
		return false
	}
	// Run is over, or the leader's work is done: stop leading, then resign.
	finished = ctx.Err() == nil
	stop(context.Canceled)
	<-returned
	e.resign(ctx, t)
	e.stopped(cb, t)
	return finished
}

// stopped calls cb.OnStoppedLeading with the end of t.
func (e *Election) stopped(cb Callbacks, t *Term) {
	if cb.OnStoppedLeading != nil {
		cb.OnStoppedLeading(context.Cause(t.Context()))
	}
}

// resign frees t's name, within resignTimeout even if ctx has ended.
func (e *Election) resign(ctx context.Context, t *Term) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	if err := t.Resign(rctx); err != nil && !errors.Is(err, ErrLost) {
		level.Warn(e.m.logger).Log("msg", "resigning failed; the term ends at its expiry", "lease", e.name,
			"token", t.Token(), "err", err)
	}
}
