// Package leasetest is the conformance suite for lease.Store: one set of
// tests that every store (storage/memory, storage/sqlite, storage/etcd and
// httpapi.Client) must pass, one subtest per rule of the lease contract
// (see lease.Store): fresh tokens are the counter plus one; a held name is
// ErrHeld with owner and expiry; the same holder gets its grant back; renew
// and release need name, holder and token of a live lease, anything else is
// ErrLost; release frees at once; only the store's clock ends a lease, and
// wall-clock steps change nothing; lock-delay; Get and List; bounds and
// ErrInvalid with nothing written; waiting acquires; mutual exclusion under
// contention; a write whose answer was lost matching lease.ErrUnknown (or
// surely not done); and the lease.Manager and *lease.Lease over the store.
//
// A store's own test wires it in with a Harness:
//
//	func TestConformance(t *testing.T) {
//		leasetest.Run(t, leasetest.Harness{
//			Open: func(t testing.TB, cfg leasetest.Config) lease.Store {
//				opts := []memory.Option{memory.WithLockDelay(cfg.LockDelay)}
//				if cfg.Clock != nil { // not a nil *Clock in a lease.Clock
//					opts = append(opts, memory.WithClock(cfg.Clock))
//				}
//				st, err := memory.New(opts...)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return st
//			},
//			OutcomeAlwaysKnown: true, // or LoseAnswer: how the store can lose a write's answer
//		})
//	}
//
// The rules about expiry run on a Clock that moves only when the test says
// so (Advance, JumpWall), so they never sleep; expiries are compared exactly,
// in whole seconds. The rules about waiting hold the fake clock still and
// wait in real time for another goroutine's release (or Advance), so a store
// must notice an expiry during a Wait by itself, by polling its clock. The
// Manager rules run on the store's real clock with TTLs of 200–300 ms. Every
// wait is bounded; the suite takes a few seconds; with -short the contention
// test does fewer rounds.
//
// A store whose clock cannot be injected (storage/etcd: the cluster's leader
// keeps time) sets Harness.RealTime: the rules that advance the fake clock
// are then replaced by ones that let leases of a TTL of a second or two
// expire in real time (realtime.go), expiries are compared with the time
// around the call, and tokens must rise but need not be consecutive.
//
// Run must not be called from a parallel test: one of its checks counts the
// process's goroutines.
package leasetest
