package storekit

import (
	"context"
	"time"

	"github.com/picketlock/picket/lease"
)

// ChangeReason is the Reason of cur, a state not Same as after, as far as
// the two states tell: a held state is "renewed" if after held the same
// token and "granted" otherwise; a free state keeps the reason its store
// gave it (released, expired, revoked). Stores use it to fill
// lease.State.Reason.
func ChangeReason(after, cur lease.State) string {
	if !cur.Held {
		return cur.Reason
	}
	if after.Held && after.Token == cur.Token {
		return lease.ReasonRenewed
	}
	return lease.ReasonGranted
}

// Wake is what ends a watch's sleep between two reads of a name's state. A
// nil channel never does.
type Wake struct {
	Changed <-chan struct{}  // closed when the name may have changed
	Moved   <-chan struct{}  // closed when the store's clock moves (lease.MovingClock)
	Poll    <-chan time.Time // a fallback tick, for a store that may not hear of every change
	Closing <-chan struct{}  // closed when the store closes: SleepWatch returns Closed
	Closed  error            // the store's error once it is closed
}

// SleepWatch waits until one of w's channels wakes it (nil), the time left
// to a held lease's deadline has passed (nil), the store closes (w.Closed) or
// ctx ends (its error). held says whether the watched name is held; left,
// the time to its deadline on the store's clock.
func SleepWatch(ctx context.Context, w Wake, held bool, left time.Duration) error {
	var expiry <-chan time.Time
	if held {
		t := time.NewTimer(left)
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-w.Changed:
	case <-w.Moved:
	case <-w.Poll:
	case <-expiry:
	case <-w.Closing:
		return w.Closed
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
