package jitter_test

import (
	"math"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/jitter"
)

// TestBetween: every draw is in range, both ends can come out of a small
// range, and empty, inverted, negative and huge ranges do not panic.
func TestBetween(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := jitter.Between(10, 12)
		if d < 10 || d > 12 {
			t.Fatalf("Between(10, 12) = %d", d)
		}
		seen[d] = true
	}
	if len(seen) != 3 {
		t.Errorf("Between(10, 12) drew %v in 1000 tries, want all of 10, 11, 12", seen)
	}
	for _, c := range []struct{ lo, hi, want time.Duration }{
		{5, 5, 5}, {7, 3, 7}, {-4, -1, 0}, {0, 0, 0},
	} {
		if got := jitter.Between(c.lo, c.hi); got != c.want {
			t.Errorf("Between(%d, %d) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
	if d := jitter.Between(-5, 3); d < 0 || d > 3 {
		t.Errorf("Between(-5, 3) = %d, want in [0, 3]", d)
	}
	if d := jitter.Between(0, math.MaxInt64); d < 0 {
		t.Errorf("Between(0, MaxInt64) = %d", d)
	}
}
