package token

import (
	"context"
	"sync"
	"sync/atomic"
)

// Fence keeps, in memory, the highest token each resource has admitted, and
// rejects lower ones. It is safe for concurrent use; the zero value is an
// empty fence, ready to use. A Fence must not be copied after first use.
//
// A Fence lives in one process. It fences writes that pass through that
// process only: several replicas of a service each have their own Fence, and
// a token refused by one is admitted by another. Replicas need the fence
// where their shared data lives (Guard or Rows in the database they share).
//
// A Fence forgets everything when the process exits: a resource restarted
// with an empty fence would admit a stale token once. Where the data outlives
// the process, keep the highest token with the data (see Guard and
// CheckUpdate). A Fence keeps one small entry per resource it has seen, for
// as long as it lives; forgetting one would reopen the resource to stale
// tokens, so there is no way to remove one.
type Fence struct {
	mu        sync.Mutex
	resources map[string]*fenceEntry // guarded by mu; entries are never removed
}

// fenceEntry is one resource's state.
type fenceEntry struct {
	// turn holds a value while one Admit or Do checks the token and, for Do,
	// runs the write. It is a channel rather than a mutex so that Do can stop
	// waiting when its context ends.
	turn chan struct{}
	// highest only grows. It is written only while holding turn, and read
	// without it by Highest and by the early stale check.
	highest atomic.Uint64
}

// entry returns the state of resource, creating it on first use.
func (f *Fence) entry(resource string) *fenceEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.resources[resource]
	if !ok {
		if f.resources == nil {
			f.resources = make(map[string]*fenceEntry)
		}
		e = &fenceEntry{turn: make(chan struct{}, 1)}
		f.resources[resource] = e
	}
	return e
}

// Highest returns the highest token resource has admitted, or zero if it has
// admitted none. It does not wait for a Do in progress.
func (f *Fence) Highest(resource string) Token {
	f.mu.Lock()
	e, ok := f.resources[resource]
	f.mu.Unlock()
	if !ok {
		return 0
	}
	return Token(e.highest.Load())
}

// Admit admits t for resource if t is at least the highest token resource has
// admitted, and records it as the new highest. An equal token is admitted: the
// current holder may write many times.
//
// Admit alone is enough only when the caller's writes to resource are already
// ordered with the admissions, for instance one goroutine that admits and then
// writes, or a write that cannot be overtaken. Otherwise a writer admitted
// with token 1 may be overtaken between Admit and its write by a writer with
// token 2, and then write last; use Do, which holds the check across the
// write. Admit waits for a Do in progress on the same resource, so a token
// admitted by Admit is ordered after that Do's write.
//
// Errors: *StaleError (matching ErrStale) if t is lower than the highest;
// ErrZero (matching ErrInvalid, not ErrStale) for the zero token; an error
// matching ErrInvalid for a token above Max. On error nothing is recorded.
func (f *Fence) Admit(resource string, t Token) error {
	return f.do(context.Background(), resource, t, nil)
}

// Do admits t for resource as Admit does and, if admitted, runs write while
// still holding resource's turn: no other Admit or Do for resource checks a
// token until write returns. Writes made through Do therefore happen in the
// order of their admission, and a stale writer can never slip its write in
// after a newer one. Calls for different resources do not wait for each other.
//
// The token stays admitted even if write fails: a token that was presented
// proves that a newer lease exists, so lower tokens are stale regardless. Do
// returns write's error unchanged. If write panics, the turn is released and
// the panic goes on.
//
// ctx bounds only the wait for resource's turn; it is not passed to write.
//
// Errors: as Admit, without calling write; ctx.Err() if ctx ends before the
// turn comes (nothing admitted, write not called); else write's error.
func (f *Fence) Do(ctx context.Context, resource string, t Token, write func() error) error {
	return f.do(ctx, resource, t, write)
}

// do is Admit (write nil) and Do.
func (f *Fence) do(ctx context.Context, resource string, t Token, write func() error) error {
	if err := check(t); err != nil {
		return err
	}
	e := f.entry(resource)
	// highest never decreases, so a token already below it will stay below:
	// reject it without waiting for the turn.
	if h := Token(e.highest.Load()); t < h {
		return &StaleError{Resource: resource, Token: t, Highest: h}
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.turn }()
	if h := Token(e.highest.Load()); t < h {
		return &StaleError{Resource: resource, Token: t, Highest: h}
	}
	e.highest.Store(uint64(t))
	if write == nil {
		return nil
	}
	return write()
}
