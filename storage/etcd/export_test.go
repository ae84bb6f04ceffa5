package etcd

import "time"

// KeepAliveAlways makes st keep every pooled etcd lease alive before it
// reuses it, as it did before it remembered their lifetimes.
func KeepAliveAlways(st *Store) { st.test.keepAliveAlways = true }

// BreakReuseAnyAge makes st reuse pooled etcd leases without keeping them
// alive whatever their age: broken on purpose, for the controls of the
// deadline tests.
func BreakReuseAnyAge(st *Store) { st.test.reuseAny = true }

// BreakHeldWhileReserved makes st answer a wait that ran out while the
// name was free but reserved for an earlier waiter with "held" by that
// waiter, as it once did: broken on purpose, for the control of
// TestWaitOverReserved.
func BreakHeldWhileReserved(st *Store) { st.test.heldWhileReserved = true }

// SimulateSuspend moves st's suspend-aware clock forward by d, as a suspend
// of the machine for d moves CLOCK_BOOTTIME while Go's monotonic clock and
// every timer stand still.
func SimulateSuspend(st *Store, d time.Duration) { st.test.suspended.Add(int64(d)) }

// BreakGoMonotonic makes st measure its pooled etcd leases' lifetimes on
// Go's monotonic clock, blind to suspend, as it did before: the control of
// the suspend test.
func BreakGoMonotonic(st *Store) { st.test.goMonotonic = true }

// KeepAlives returns how many keep-alives st has sent.
func KeepAlives(st *Store) int64 { return st.test.keepAlives.Load() }
