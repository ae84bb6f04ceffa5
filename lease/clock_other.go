//go:build !linux

package lease

import "time"

var processStart = time.Now()

// bootTime is Go's monotonic clock outside Linux: it may stop while the
// machine sleeps (see WithClock).
func bootTime() time.Duration { return time.Since(processStart) }
