package lease

import "time"

// WatchPeriod exposes watchPeriod to the external tests.
const WatchPeriod = watchPeriod

// GoClock returns a Clock on Go's monotonic clock, counting from the call:
// what the handle measured on before it counted suspend. The tests in
// synctest bubbles use it, since the bubble's virtual time moves Go's clock
// and not CLOCK_BOOTTIME; the suspend test's control uses it as the old
// behaviour. Call it inside the bubble.
func GoClock() Clock { return goClock{start: time.Now()} }

type goClock struct{ start time.Time }

func (c goClock) Now() time.Duration { return time.Hour + time.Since(c.start) }
func (c goClock) Epoch() string      { return "" }
func (c goClock) Wall() time.Time    { return time.Now().UTC() }
