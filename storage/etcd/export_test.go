package etcd

import "github.com/picketlock/picket/lease"

// SetClock makes st observe lease keys on c instead of the machine's
// suspend-aware clock.
func SetClock(st *Store, c lease.Clock) { st.boot = c }
