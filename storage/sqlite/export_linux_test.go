package sqlite

import (
	"errors"

	"github.com/picketlock/picket/lease"
)

// LegacySystemClock is SystemClock as it was before time namespaces
// counted: its epoch is the boot id alone. For the control of the time
// namespace test.
func LegacySystemClock() lease.Clock {
	id, _ := bootID()
	return systemClock{epoch: id}
}

// UnreadableClock is the system clock of a process that could not read its
// epoch.
func UnreadableClock() lease.Clock {
	return systemClock{err: errors.New("read the boot id: no such file")}
}
