package lease

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by a Store and by the Manager. Match them with errors.Is:
// they hold the same way in process and across httpapi.
var (
	// ErrHeld: the name is held by another holder. The details are in a
	// *HeldError.
	ErrHeld = errors.New("lease: held")

	// ErrLost: the lease is no longer held by this holder with this token. It
	// is terminal: whoever held it must stop writing.
	ErrLost = errors.New("lease: lost")

	// ErrReleased is the cause of a lease's context after a clean Release.
	ErrReleased = errors.New("lease: released")

	// ErrNotFound: no live lease (or fenced value) under that name.
	ErrNotFound = errors.New("lease: not found")

	// ErrInvalid: the request is malformed; nothing was written.
	ErrInvalid = errors.New("lease: invalid argument")

	// ErrUnavailable: the store cannot grant now, for instance after a failed
	// commit, when it refuses every grant rather than risk a token whose
	// commit is in doubt.
	ErrUnavailable = errors.New("lease: store unavailable")

	// ErrUnknown: a write (an acquire, renew, release, revoke or fenced
	// write) was submitted, but its answer was lost (ctx ended while the
	// store had the write in hand, the connection broke, the cluster did not
	// answer in time): it may or may not have taken effect. It comes with
	// ctx's error or ErrUnavailable, which the error also matches. The
	// holder's retry with the same holder secret is safe: an acquire that did
	// commit is granted again (same token), a renewal renewed again. The
	// Manager releases what an acquire it gave up on may have left under a
	// holder secret it made; a lease handle treats any renewal it did not
	// get an answer to as one that may have shortened its TTL.
	ErrUnknown = errors.New("lease: outcome unknown")

	// ErrNoKey: no value under that key in a fenced key-value store (never
	// written, or deleted). It matches ErrNotFound, so one check covers both;
	// its message says "no such key", not "lease: not found".
	ErrNoKey error = &notFoundError{"no such key"}

	// ErrQuota: the write would take the store over one of its quotas (of
	// leases, fenced keys or fenced bytes); nothing was written. Trying again
	// helps only once something was released or deleted.
	ErrQuota = errors.New("lease: quota exceeded")
)

// notFoundError is an ErrNotFound for something other than a lease, with a
// message that says what is missing.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// Is reports whether target is ErrNotFound.
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// HeldError reports that Name is held by someone else, labelled Owner, until
// Expires (wall-clock rendering of the store's deadline, lock-delay included).
type HeldError struct {
	Name    string
	Owner   string
	Expires time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease: held: %q is held by %q until %s", e.Name, e.Owner, e.Expires.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
