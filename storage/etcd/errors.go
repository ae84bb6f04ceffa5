package etcd

import (
	"context"
	"errors"
	"fmt"

	"github.com/picketlock/picket/lease"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// ErrClosed is returned by every method after Close.
var ErrClosed = fmt.Errorf("etcd: store closed: %w", lease.ErrUnavailable)

// UnavailableError reports that the cluster did not answer (unreachable, no
// leader, no quorum, a request timed out). It matches lease.ErrUnavailable,
// and lease.ErrUnknown too when Unknown is set.
//
// Unknown is true when the request was a write whose outcome is unknown: it
// may have been committed. Such an error is never a definite failure: an
// acquire may have granted the lease (the holder's retry gets the same grant
// back; otherwise it expires at its TTL), a renew may have extended it, a
// release may have freed it.
type UnavailableError struct {
	Op      string // "acquire", "renew", ...
	Name    string
	Unknown bool
	Cause   error
}

func (e *UnavailableError) Error() string {
	outcome := ""
	if e.Unknown {
		outcome = " (outcome unknown: it may have been committed)"
	}
	return fmt.Sprintf("etcd: %s %q: cluster unavailable%s: %v", e.Op, e.Name, outcome, e.Cause)
}

// Is reports whether target is lease.ErrUnavailable, or lease.ErrUnknown
// for an error of unknown outcome.
func (e *UnavailableError) Is(target error) bool {
	return target == lease.ErrUnavailable || e.Unknown && target == lease.ErrUnknown
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("etcd: %w: %s", lease.ErrInvalid, fmt.Sprintf(format, args...))
}

// failed maps an error of the etcd client for op on name. The caller's
// context ending is its own error (wrapped, and Unknown when write); every
// other failure of the cluster is an *UnavailableError. write says whether
// the request could have changed the store.
func failed(ctx context.Context, op, name string, write bool, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		if write {
			return &UnavailableError{Op: op, Name: name, Unknown: true, Cause: context.Cause(ctx)}
		}
		return fmt.Errorf("etcd: %s %q: %w", op, name, context.Cause(ctx))
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	return &UnavailableError{Op: op, Name: name, Unknown: write && !definite(err), Cause: err}
}

// definite reports whether err says that the cluster refused the request
// before doing anything (no leader, a bad request), so that a write surely
// did not happen.
func definite(err error) bool {
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrGRPCNoLeader),
		errors.Is(err, rpctypes.ErrLeaseNotFound),
		errors.Is(err, rpctypes.ErrGRPCLeaseNotFound),
		errors.Is(err, rpctypes.ErrPermissionDenied),
		errors.Is(err, rpctypes.ErrGRPCPermissionDenied),
		errors.Is(err, rpctypes.ErrInvalidAuthToken),
		errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken):
		return true
	}
	return false
}

// isLeaseNotFound reports whether err says the etcd lease is gone (expired
// or revoked).
func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound)
}
