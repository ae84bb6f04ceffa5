package etcd

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/picketlock/picket/lease"
)

// SetClock makes st observe lease keys on c instead of the machine's
// suspend-aware clock.
func SetClock(st *Store, c lease.Clock) { st.boot = c }

// SweepOnce makes st look at the first page of lease keys, as its sweep
// does every few seconds.
func SweepOnce(st *Store) { st.sweepPage("") }

// Client returns the etcd client st uses, for tests that put keys or
// leases beside the store's own (the Store has no such method: a caller
// could close the store's client under it).
func Client(st *Store) *clientv3.Client { return st.client }
