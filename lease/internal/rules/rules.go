// Package rules holds the checks on names, TTLs and tokens that package lease
// (its requests' Validate methods) and package lease/storekit (the helpers
// for store implementers) both apply, so that the two cannot drift. Its
// errors say only what is wrong; the callers wrap them in lease.ErrInvalid.
package rules

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/picketlock/picket/token"
)

// Text checks s, a piece of text named what: at most max bytes of UTF-8
// without control or format characters, and not empty unless emptyOK.
func Text(what, s string, max int, emptyOK bool) error {
	if s == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("%s is empty", what)
	}
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes, longer than %d", what, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q contains the control character %U", what, s, r)
		}
		if unicode.Is(unicode.Cf, r) {
			// Zero-width and bidi-override characters make two names that
			// look alike differ, or one name look like another.
			return fmt.Errorf("%s %q contains the format character %U", what, s, r)
		}
	}
	return nil
}

// TTL checks that ttl is a whole number of res between lo and hi.
func TTL(ttl, lo, hi, res time.Duration) error {
	if ttl < lo || ttl > hi {
		return fmt.Errorf("ttl %v is out of bounds [%v, %v]", ttl, lo, hi)
	}
	if ttl%res != 0 {
		return fmt.Errorf("ttl %v is not a whole number of milliseconds", ttl)
	}
	return nil
}

// Token checks that t can be a granted token.
func Token(t token.Token) error {
	if t == 0 {
		return fmt.Errorf("token is zero")
	}
	if t > token.Max {
		return fmt.Errorf("token %d is above %d", t, token.Max)
	}
	return nil
}
