package token

import (
	"errors"
	"fmt"
)

// ErrStale is the error a fence returns for a write whose token is lower than
// the highest token the resource has already seen. It is terminal: the writer
// has lost its lease and must stop, not retry. Match it with errors.Is; the
// details are in a *StaleError.
var ErrStale = errors.New("token: stale")

// StaleError reports a rejected write: Token was presented for Resource, which
// has already seen Highest.
type StaleError struct {
	Resource string
	Token    Token
	Highest  Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("token: stale: %q got token %d, highest seen is %d", e.Resource, e.Token, e.Highest)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }
