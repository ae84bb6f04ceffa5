package etcd

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
