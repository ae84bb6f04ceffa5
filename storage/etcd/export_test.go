package etcd

import "github.com/picketlock/picket/lease"

// SetClock makes st observe lease keys on c instead of the machine's
// suspend-aware clock.
func SetClock(st *Store, c lease.Clock) { st.boot = c }

// SweepOnce makes st look at the first page of lease keys, as its sweep
// does every few seconds.
func SweepOnce(st *Store) { st.sweepPage("") }
