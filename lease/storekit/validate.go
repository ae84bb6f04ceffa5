package storekit

import (
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/internal/rules"
	"github.com/picketlock/picket/token"
)

// ValidateName checks a lease name or a fenced key: 1–256 bytes of UTF-8
// without control or format characters. Errors: one matching
// lease.ErrInvalid.
func ValidateName(s string) error { return invalidIf(rules.Text("name", s, lease.MaxNameLen, false)) }

// ValidateTTL checks that ttl is a whole number of milliseconds between
// lease.MinTTL and lease.MaxTTL. Errors: one matching lease.ErrInvalid.
func ValidateTTL(ttl time.Duration) error {
	return invalidIf(rules.TTL(ttl, lease.MinTTL, lease.MaxTTL, time.Millisecond))
}

// ValidateToken checks that t can be a granted token (a fenced write's, a
// floor). Errors: one matching lease.ErrInvalid.
func ValidateToken(t token.Token) error { return invalidIf(rules.Token(t)) }

// ValidatePrefix checks a prefix of names; the empty prefix is every name.
// Errors: one matching lease.ErrInvalid.
func ValidatePrefix(p string) error {
	return invalidIf(rules.Text("prefix", p, lease.MaxPrefixLen, true))
}

// ValidateWatch checks the arguments of lease.Watcher.Watch as every store
// does: a valid name, and an after that is zero or names the same name.
// Errors: one matching lease.ErrInvalid.
func ValidateWatch(name string, after lease.State) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if after.Name != "" && after.Name != name {
		return fmt.Errorf("%w: watch %q: after is a state of %q", lease.ErrInvalid, name, after.Name)
	}
	return nil
}

// invalidIf wraps a rule's complaint, if any, in lease.ErrInvalid, as
// package lease does.
func invalidIf(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", lease.ErrInvalid, err)
}
