//go:build !linux

package sqlite

import (
	"errors"
	"os"
)

// openWatch has no change notification to offer here: waiters find grants
// by their timers.
func openWatch(path string) (*os.File, error) {
	return nil, errors.New("no change notification on this platform")
}
