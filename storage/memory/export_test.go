package memory

import "github.com/picketlock/picket/token"

// SetCounter sets the last token handed out, for the tests of the counter's
// upper bound.
func (s *Store) SetCounter(t token.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter = t
}
