package storekit

import (
	"errors"

	"github.com/picketlock/picket/lease"
)

// Unknown returns err, the error of a write whose outcome the store cannot
// tell (ctx ended or the connection broke after the write was submitted),
// marked so that it also matches lease.ErrUnknown. It still matches
// everything err matches (ctx's error, lease.ErrUnavailable). Unknown(nil)
// is nil, and an err that already matches lease.ErrUnknown comes back as it
// is.
func Unknown(err error) error {
	if err == nil || errors.Is(err, lease.ErrUnknown) {
		return err
	}
	return &unknownError{err}
}

// unknownError is an error of unknown outcome.
type unknownError struct{ cause error }

func (e *unknownError) Error() string {
	return e.cause.Error() + " (outcome unknown: it may have taken effect)"
}

// Is reports whether target is lease.ErrUnknown.
func (e *unknownError) Is(target error) bool { return target == lease.ErrUnknown }

// Unwrap returns the cause.
func (e *unknownError) Unwrap() error { return e.cause }
