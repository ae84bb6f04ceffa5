package storekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// TestUnknown: Unknown keeps what its error matched and adds
// lease.ErrUnknown, once.
func TestUnknown(t *testing.T) {
	if storekit.Unknown(nil) != nil {
		t.Fatal("Unknown(nil) is not nil")
	}
	for _, cause := range []error{context.DeadlineExceeded, fmt.Errorf("x: %w", lease.ErrUnavailable)} {
		err := storekit.Unknown(cause)
		if !errors.Is(err, lease.ErrUnknown) || !errors.Is(err, cause) {
			t.Errorf("Unknown(%v) = %v: ErrUnknown %v, cause %v; want both", cause, err,
				errors.Is(err, lease.ErrUnknown), errors.Is(err, cause))
		}
		if again := storekit.Unknown(err); again != err {
			t.Errorf("Unknown of an unknown error wrapped it again: %v", again)
		}
		if !strings.Contains(err.Error(), cause.Error()) {
			t.Errorf("Unknown(%v).Error() = %q, which hides the cause", cause, err)
		}
	}
	if errors.Is(fmt.Errorf("x: %w", lease.ErrUnavailable), lease.ErrUnknown) {
		t.Error("a plain ErrUnavailable matches ErrUnknown")
	}
}

// TestSleepWatch: a watch's sleep ends on a wake (nil), the store closing
// (its error) or ctx (ctx's error), whichever comes first.
func TestSleepWatch(t *testing.T) {
	closedErr := errors.New("store closed")
	closed := make(chan struct{})
	close(closed)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		w    storekit.Wake
		held bool
		want error
	}{
		{"changed", t.Context(), storekit.Wake{Changed: closed}, false, nil},
		{"moved", t.Context(), storekit.Wake{Moved: closed}, false, nil},
		{"deadline", t.Context(), storekit.Wake{}, true, nil},
		{"closing", t.Context(), storekit.Wake{Closing: closed, Closed: closedErr}, false, closedErr},
		{"ctx", ctx, storekit.Wake{}, false, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := storekit.SleepWatch(tc.ctx, tc.w, tc.held, time.Millisecond); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("SleepWatch = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestValidate: storekit's checks refuse what the requests' Validate
// methods refuse, with ErrInvalid.
func TestValidate(t *testing.T) {
	for name, err := range map[string]error{
		"empty name":       storekit.ValidateName(""),
		"control in name":  storekit.ValidateName("a\nb"),
		"ttl too short":    storekit.ValidateTTL(time.Millisecond),
		"ttl not whole ms": storekit.ValidateTTL(time.Second + time.Microsecond),
		"zero token":       storekit.ValidateToken(0),
		"prefix too long":  storekit.ValidatePrefix(strings.Repeat("p", lease.MaxPrefixLen+1)),
		"watch other name": storekit.ValidateWatch("a", lease.State{Info: lease.Info{Name: "b"}}),
	} {
		if !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v, want lease.ErrInvalid", name, err)
		}
	}
	for name, err := range map[string]error{
		"name":         storekit.ValidateName("jobs/nightly"),
		"ttl":          storekit.ValidateTTL(time.Second),
		"token":        storekit.ValidateToken(1),
		"empty prefix": storekit.ValidatePrefix(""),
		"first watch":  storekit.ValidateWatch("a", lease.State{}),
	} {
		if err != nil {
			t.Errorf("%s: %v, want nil", name, err)
		}
	}
	// The same rule, the same message, as a request's Validate.
	a, b := storekit.ValidateName("a\x00"), (lease.ReleaseRequest{Name: "a\x00", Holder: "h", Token: 1}).Validate()
	if a == nil || b == nil || a.Error() != b.Error() {
		t.Errorf("ValidateName = %v, ReleaseRequest.Validate = %v: want the same error", a, b)
	}
}
