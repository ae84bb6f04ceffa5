package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/picketlock/picket/lease"
)

// execBatch runs ops in one immediate transaction and commits it. An op's
// own failure (held, lost, stale) is its result; an SQL error fails the
// whole batch, which is rolled back.
//
// A release whose name has waiters hands it over to the oldest acquire
// waiting for it in any process (the waiters table, queue.go), in the same
// transaction; one waiting in this process is answered directly: those ops
// are appended to *handed, even when the batch then fails, and their
// results come back in handedRes.
//
// The batch's jobs, in order: its sync mode (a light batch's, light.go),
// BEGIN and the batch's head (open), the ops (applyAll), what it writes
// once before COMMIT and COMMIT itself (finish), and, once committed, the
// news for the rest of the Store (committed).
//
// A batch that is not light takes in the ops that arrive while it runs
// (join: writer.go's joinBatch, or nil), appended to *opsp.
func (s *Store) execBatch(opsp *[]*op, handed *[]*op, join func([]*op) []*op) (results, handedRes []result, err error) {
	ctx := context.Background()
	ops := *opsp
	light := lightBatch(ops) // light.go
	if light {
		if err := s.setSync(ctx, "NORMAL"); err != nil {
			return nil, nil, err
		}
		defer func() {
			if e := s.setSync(ctx, "FULL"); e != nil && err == nil {
				err = e
			}
		}()
	}
	if _, err := s.w.begin.ExecContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			s.rollback()
		}
	}()
	b := batch{s: s, ctx: ctx, handed: handed, light: light}
	epoch, err := b.open()
	if err != nil {
		return nil, nil, err
	}
	if !light {
		b.join, b.epoch = join, epoch
	}
	ops, results, err = b.applyAll(ops)
	*opsp = ops
	if err != nil {
		return nil, nil, err
	}
	if err := b.finish(); err != nil {
		return nil, nil, err
	}
	s.committed(&b, ops, epoch)
	return results, b.handedRes, nil
}

// open reads the batch's head (start) and drops the waiters rows of calls
// this process forgot (queue.go), right after BEGIN. It returns the epoch
// the batch runs in.
func (b *batch) open() (string, error) {
	epoch, err := b.start()
	if err != nil {
		return "", err
	}
	b.first = b.counter
	return epoch, b.forget()
}

// applyAll applies each op in turn; an SQL error ends the batch. Once it
// has applied them all, a batch that takes in late ops (b.join) appends
// those that arrived meanwhile and applies them too, with the store's clock
// read again: an op sent after the batch read it must not have its lease
// counted from an earlier moment than its caller counts it. It returns ops
// with what joined.
func (b *batch) applyAll(ops []*op) ([]*op, []result, error) {
	results := make([]result, 0, len(ops))
	for i := 0; i < len(ops); i++ {
		o := ops[i]
		r, err := b.apply(o)
		if err != nil {
			return ops, nil, err
		}
		if b.deferred {
			// Left for a full batch, having written nothing (light.go:
			// deferFull): not answered, so nothing to abandon.
			b.deferred, r = false, result{err: errDeferred}
		}
		results = append(results, r)
		if o.parked != nil && r.err != errDeferred && !errors.Is(r.err, lease.ErrHeld) {
			// The call is answered by this try: one call, one effect.
			o.parked.state.CompareAndSwap(opPending, opAbandoned)
		}
		if i == len(ops)-1 && b.join != nil && b.s.clock.Epoch() == b.epoch {
			// (A clock whose epoch changed since the batch began, which
			// only a test's clock can do, takes nobody in: the batch's
			// deadlines are in the epoch it began in.)
			b.s.w.hook("take-in")
			if more := b.join(ops); len(more) > len(ops) {
				ops = more
				b.now, b.wall = b.s.clock.Now(), b.s.clock.Wall()
			}
		}
	}
	return ops, results, nil
}

// finish writes what the batch writes once (the token counter, if it
// moved, and the history's events: part of the transaction, so an event is
// committed exactly when its change is) and commits. A light batch must
// have changed nothing that must survive a power loss (light.go:
// deferFull): one that did is a bug, refused before its COMMIT.
func (b *batch) finish() error {
	w := b.s.w
	if b.counter != b.first {
		if _, err := w.setCounter.ExecContext(b.ctx, int64(b.counter)); err != nil {
			return fmt.Errorf("write token counter: %w", err)
		}
	}
	b.durable = b.durable || b.counter != b.first
	if b.light && (b.durable || len(b.events) > 0) {
		return errLightDurable
	}
	if err := b.writeHistory(); err != nil { // history.go
		return err
	}
	w.hook("before-commit")
	if _, err := w.commit.ExecContext(b.ctx); err != nil {
		return fmt.Errorf("%w: %w", errCommit, err)
	}
	if b.light {
		w.hook("light-committed")
	}
	w.hook("after-commit")
	return nil
}

// committed tells the rest of the Store what a committed batch did: the
// file's epoch, the quota counts (quota.go), the waiters it queued and
// answered (queue.go), the history's prune (history.go) and the watches
// (watch.go).
func (s *Store) committed(b *batch, ops []*op, epoch string) {
	if *s.epoch.Load() != epoch {
		s.epoch.Store(&epoch)
	}
	s.kvCommitted(&b.q)
	s.queueCommitted(b)
	s.historyCommitted(b)
	s.watchCommitted(ops)
}
