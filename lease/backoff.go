package lease

import (
	"context"
	"time"

	"github.com/picketlock/picket/internal/jitter"
)

// backoff is a doubling pause with jitter: each delay is drawn between half
// and all of the current step, and the step doubles up to max. The jitter
// spreads out clients that failed together, so they do not retry together.
type backoff struct {
	min, max time.Duration
	step     time.Duration
}

func newBackoff(lo, hi time.Duration) *backoff {
	hi = max(lo, hi)
	return &backoff{min: lo, max: hi, step: lo}
}

// next returns the next delay, in [step/2, step], and doubles the step.
func (b *backoff) next() time.Duration {
	d := jitter.Between(b.step/2, b.step)
	b.step = min(2*b.step, b.max)
	return d
}

// sleep waits for d or the end of ctx; it reports whether the full d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
