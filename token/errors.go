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

// ErrInvalid matches every error about malformed input: text that is not a
// token, the zero token, a token above Max, a missing or repeated header, a
// table name that is not a plain identifier. Nothing was admitted or written.
// It never matches ErrStale.
var ErrInvalid = errors.New("token: invalid")

// ErrZero is the error for the zero token, which means "no token" and is never
// granted. It matches ErrInvalid, not ErrStale: a writer without a token made
// a mistake; it was not overtaken by a newer holder.
var ErrZero = fmt.Errorf("%w: zero is not a token", ErrInvalid)

// ErrMissing is the error FromRequest returns for a request without a
// Fencing-Token header. It matches ErrInvalid.
var ErrMissing = fmt.Errorf("%w: no %s header", ErrInvalid, Header)

// StaleError reports a rejected write: Token was presented for Resource, which
// has already seen Highest. Highest is zero when it is not known (see
// CheckUpdate).
type StaleError struct {
	Resource string
	Token    Token
	Highest  Token
}

func (e *StaleError) Error() string {
	if e.Highest == 0 {
		return fmt.Sprintf("token: stale: %q rejected token %d, a higher token was seen", e.Resource, e.Token)
	}
	return fmt.Sprintf("token: stale: %q got token %d, highest seen is %d", e.Resource, e.Token, e.Highest)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// invalid returns an error matching ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// check returns nil for a token picket can grant, else an error matching
// ErrInvalid (ErrZero for zero).
func check(t Token) error {
	switch {
	case t == 0:
		return ErrZero
	case t > Max:
		return invalid("%d is above the largest token %d", uint64(t), uint64(Max))
	}
	return nil
}
