package lease

import (
	"fmt"
	"time"

	"github.com/picketlock/picket/lease/internal/rules"
	"github.com/picketlock/picket/token"
)

// Bounds on requests. Anything outside them is ErrInvalid, never clamped.
const (
	MinTTL       = 10 * time.Millisecond
	MaxTTL       = 24 * time.Hour
	MaxWait      = 60 * time.Second
	MaxNameLen   = 256 // bytes
	MaxHolderLen = 256 // bytes
	MaxOwnerLen  = 256 // bytes
	MaxPrefixLen = MaxNameLen
	MaxLockDelay = 60 * time.Second

	DefaultListLimit = 1000  // leases in a page of Store.List when the request says 0
	MaxListLimit     = 10000 // the largest page of Store.List
	ttlResolution    = time.Millisecond
)

// validateName checks a lease name (or fenced key): 1–256 bytes of UTF-8
// without control characters.
func validateName(s string) error { return validateText("name", s, MaxNameLen, false) }

// validateTTL checks that ttl is a whole number of milliseconds between
// MinTTL and MaxTTL.
func validateTTL(ttl time.Duration) error {
	return invalidIf(rules.TTL(ttl, MinTTL, MaxTTL, ttlResolution))
}

// validateToken checks that t can be a granted token.
func validateToken(t token.Token) error { return invalidIf(rules.Token(t)) }

// Validate checks every field of r.
func (r AcquireRequest) Validate() error {
	if err := validateName(r.Name); err != nil {
		return err
	}
	if err := validateText("holder", r.Holder, MaxHolderLen, false); err != nil {
		return err
	}
	if err := validateText("owner", r.Owner, MaxOwnerLen, true); err != nil {
		return err
	}
	if err := validateTTL(r.TTL); err != nil {
		return err
	}
	if r.Wait < 0 || r.Wait > MaxWait {
		return invalid("wait %v is out of bounds [0, %v]", r.Wait, MaxWait)
	}
	if r.LockDelay < 0 || r.LockDelay > MaxLockDelay {
		return invalid("lock delay %v is out of bounds [0, %v]", r.LockDelay, MaxLockDelay)
	}
	if r.LockDelay%ttlResolution != 0 {
		return invalid("lock delay %v is not a whole number of milliseconds", r.LockDelay)
	}
	return nil
}

// Validate checks every field of r; a zero TTL means "keep the lease's
// TTL".
func (r RenewRequest) Validate() error {
	if err := (ReleaseRequest{Name: r.Name, Holder: r.Holder, Token: r.Token}).Validate(); err != nil {
		return err
	}
	if r.TTL != 0 {
		return validateTTL(r.TTL)
	}
	return nil
}

// Validate checks every field of r.
func (r ReleaseRequest) Validate() error {
	if err := validateName(r.Name); err != nil {
		return err
	}
	if err := validateText("holder", r.Holder, MaxHolderLen, false); err != nil {
		return err
	}
	return validateToken(r.Token)
}

// Validate checks every field of r.
func (r ListRequest) Validate() error {
	if err := validateText("prefix", r.Prefix, MaxPrefixLen, true); err != nil {
		return err
	}
	if err := validateText("after", r.After, MaxNameLen, true); err != nil {
		return err
	}
	if r.Limit < 0 || r.Limit > MaxListLimit {
		return invalid("limit %d is out of bounds [0, %d]", r.Limit, MaxListLimit)
	}
	return nil
}

// PageLimit is the number of leases a page of r holds at most: r.Limit, or
// DefaultListLimit when it is 0.
func (r ListRequest) PageLimit() int {
	if r.Limit == 0 {
		return DefaultListLimit
	}
	return r.Limit
}

// validateText checks s, named what, with the rules of package rules.
func validateText(what, s string, max int, emptyOK bool) error {
	return invalidIf(rules.Text(what, s, max, emptyOK))
}

// invalidIf wraps a rule's complaint, if any, in ErrInvalid.
func invalidIf(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrInvalid, err)
}
