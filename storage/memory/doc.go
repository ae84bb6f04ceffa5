// Package memory is a lease.Store that keeps everything in the memory of one
// process: a mutex, a map of leases and a token counter.
//
// Its tokens do not survive the process. After a restart the counter starts
// again from zero and hands out tokens that were handed out before, which
// breaks picket's promise that a token is never handed out twice. Use it for
// tests, examples and as the baseline of the benchmarks — never to protect
// data that outlives the process. For that, use storage/sqlite.
//
// Within one process it keeps the whole lease contract (see lease.Store and
// lease/leasetest): a grant on a free or expired name takes the counter plus
// one; a name held by another holder is lease.ErrHeld; the same holder
// acquiring again gets its grant back with the expiry extended; renew and
// release need name, holder and token of a live lease, anything else is
// lease.ErrLost; bad input is lease.ErrInvalid and changes nothing.
//
// Expiry follows the store's lease.Clock (by default the process's monotonic
// clock; tests pass a leasetest.Clock with WithClock). WithLockDelay keeps a
// name unavailable for a while after its lease expires, but not after a clean
// release.
//
// An Acquire with a Wait is woken at once when the name is released in this
// process; expiry is noticed by polling with a jittered backoff of at most
// 250 ms.
//
//	s, err := memory.New()
//	if err != nil {
//		return err // lease.ErrInvalid: an option out of range
//	}
//	m, err := lease.NewManager(s)
//	if err != nil {
//		return err
//	}
//	l, err := m.TryAcquire(ctx, "reports/daily", 30*time.Second)
package memory
