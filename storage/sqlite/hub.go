package sqlite

import "sync"

// hub wakes the acquires waiting in this process for a name at once when
// the name is released here. Releases by other processes are not seen: the
// waiters' backoff timers find those.
type hub struct {
	mu sync.Mutex
	m  map[string]*waitList
}

type waitList struct {
	ch chan struct{} // closed by notify
	n  int           // watchers still registered
}

// watch returns a channel closed by the next release of name, and a
// function that unregisters the watcher. Watch before trying, so that a
// release between the try and the wait is not missed.
func (h *hub) watch(name string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]*waitList)
	}
	w := h.m[name]
	if w == nil {
		w = &waitList{ch: make(chan struct{})}
		h.m[name] = w
	}
	w.n++
	return w.ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		w.n--
		if w.n == 0 && h.m[name] == w {
			delete(h.m, name)
		}
	}
}

// notify wakes every watcher of name.
func (h *hub) notify(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.m[name]; w != nil {
		close(w.ch)
		delete(h.m, name)
	}
}
