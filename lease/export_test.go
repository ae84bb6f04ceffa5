package lease

import "time"

// Jitter exposes jitter to the external tests.
func Jitter(d time.Duration) time.Duration { return jitter(d) }
