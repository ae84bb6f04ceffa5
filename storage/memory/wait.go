package memory

import (
	"context"
	"time"
)

// waiters is the wake-up channel of one name and how many acquires wait on
// it. A release closes the channel, waking all of them.
type waiters struct {
	ch chan struct{}
	n  int
}

// sleep waits for d, a release of name (w is its waiter, from join) or the
// end of ctx, whichever comes first; it returns ctx's error if ctx ended.
func (s *Store) sleep(ctx context.Context, name string, w *waiters, d time.Duration) error {
	defer s.leave(name, w)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// join registers a waiter on name. s.mu must be held.
func (s *Store) join(name string) *waiters {
	w := s.waiters[name]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		s.waiters[name] = w
	}
	w.n++
	return w
}

// leave unregisters a waiter; the last one out removes the channel.
func (s *Store) leave(name string, w *waiters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.n--
	if w.n == 0 && s.waiters[name] == w {
		delete(s.waiters, name)
	}
}

// wake wakes every acquire waiting on name. s.mu must be held.
func (s *Store) wake(name string) {
	if w := s.waiters[name]; w != nil {
		close(w.ch)
		delete(s.waiters, name)
	}
}
