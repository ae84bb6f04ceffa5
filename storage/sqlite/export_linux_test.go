package sqlite

import "github.com/picketlock/picket/lease"

// LegacySystemClock is SystemClock as it was before time namespaces
// counted: its epoch is the boot id alone. For the control of the time
// namespace test.
func LegacySystemClock() lease.Clock { return systemClock{epoch: bootID()} }
