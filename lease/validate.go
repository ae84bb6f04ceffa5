package lease

import (
	"time"
	"unicode"
	"unicode/utf8"

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

// ValidateName reports whether s is a valid lease name (or fenced key): 1–256
// bytes of UTF-8 without control characters.
func ValidateName(s string) error { return validateText("name", s, MaxNameLen, false) }

// ValidateTTL reports whether ttl is a whole number of milliseconds between
// MinTTL and MaxTTL.
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return invalid("ttl %v is out of bounds [%v, %v]", ttl, MinTTL, MaxTTL)
	}
	if ttl%ttlResolution != 0 {
		return invalid("ttl %v is not a whole number of milliseconds", ttl)
	}
	return nil
}

// ValidateToken reports whether t can be a granted token.
func ValidateToken(t token.Token) error {
	if t == 0 {
		return invalid("token is zero")
	}
	if t > token.Max {
		return invalid("token %d is above %d", t, token.Max)
	}
	return nil
}

// Validate checks every field of r.
func (r AcquireRequest) Validate() error {
	if err := ValidateName(r.Name); err != nil {
		return err
	}
	if err := validateText("holder", r.Holder, MaxHolderLen, false); err != nil {
		return err
	}
	if err := validateText("owner", r.Owner, MaxOwnerLen, true); err != nil {
		return err
	}
	if err := ValidateTTL(r.TTL); err != nil {
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

// ValidateRenew checks the arguments of Store.Renew; a zero ttl means "keep
// the lease's TTL".
func ValidateRenew(name, holder string, tok token.Token, ttl time.Duration) error {
	if err := ValidateRelease(name, holder, tok); err != nil {
		return err
	}
	if ttl != 0 {
		return ValidateTTL(ttl)
	}
	return nil
}

// ValidateRelease checks the arguments of Store.Release.
func ValidateRelease(name, holder string, tok token.Token) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := validateText("holder", holder, MaxHolderLen, false); err != nil {
		return err
	}
	return ValidateToken(tok)
}

// ValidatePrefix checks a list prefix; the empty prefix lists everything.
func ValidatePrefix(p string) error { return validateText("prefix", p, MaxPrefixLen, true) }

// Validate checks every field of r.
func (r ListRequest) Validate() error {
	if err := ValidatePrefix(r.Prefix); err != nil {
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

func validateText(what, s string, max int, emptyOK bool) error {
	if s == "" {
		if emptyOK {
			return nil
		}
		return invalid("%s is empty", what)
	}
	if len(s) > max {
		return invalid("%s is %d bytes, longer than %d", what, len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return invalid("%s %q contains the control character %U", what, s, r)
		}
		if unicode.Is(unicode.Cf, r) {
			// Zero-width and bidi-override characters make two names that
			// look alike differ, or one name look like another.
			return invalid("%s %q contains the format character %U", what, s, r)
		}
	}
	return nil
}
