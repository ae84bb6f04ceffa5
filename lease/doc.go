// Package lease is picket's lock: a lease is a lock that expires by itself.
//
// # The idea
//
// A process that holds a plain lock and then crashes, hangs or loses its
// network holds it forever. A lease avoids that: it is granted for a TTL, and
// unless its holder renews it in time, the store lets it expire and gives the
// name to someone else. A crash costs a TTL, not a stalled system.
//
// Expiry has a price. A holder that is alive but paused — a long garbage
// collection, a stopped VM, a swapped-out page — can wake up after its lease
// expired and another process took the name, and write anyway: it does not
// know time passed. No check on the holder's side closes that gap, because
// the pause can fall between the check and the write. So every grant carries
// a fencing token, a number greater than every token handed out before, for
// any name. The holder sends it with each write, and the resource (see
// package token) refuses a token lower than the highest it has seen. The
// paused holder's late write carries an old token and is refused; the
// refusal is the signal to stop (Lease.Fenced).
//
// Two more pieces complete the picture:
//
//   - The holder secret. A grant is held by a holder: a random 128-bit
//     secret that renew and release must present with the token. The owner
//     label ("host/pid") only tells people who holds what; knowing it proves
//     nothing, and Get and List never reveal the secret.
//
//   - The local deadline. Only the store's clock decides expiry. The handle
//     keeps its own, more cautious deadline: from the instant before the
//     acquire or renew request was sent, plus the TTL, minus a margin (a
//     tenth of the TTL by default). The store received the request after
//     that instant, so its expiry is later; the handle gives the lease up
//     first and never believes in a lease the store has already expired, as
//     long as the two clocks run at about the same rate. Fencing still
//     guards the rest. The deadline is measured on a clock that counts
//     suspend (CLOCK_BOOTTIME on Linux, as the SQLite store's), so a closed
//     laptop lid or a frozen VM cannot stretch it; the handle wakes at least
//     every second to read that clock, so its context ends within a second
//     of a resume. A renewal whose outcome is unknown (a timeout, a lost
//     answer) may have been committed: it moves the deadline to the earlier
//     of where it was and the instant before it was sent plus its TTL minus
//     the margin, the earliest expiry any outcome allows.
//
// # The API
//
// A Store is where leases and the token counter live (storage/sqlite, an
// httpapi.Client, storage/memory for tests); every store passes the suite in
// lease/leasetest. A Manager acquires leases from a Store:
//
//	m, err := lease.NewManager(store, lease.WithOwner("billing-cron"))
//	if err != nil {
//		return err // ErrInvalid: a nil store or a bad option
//	}
//	l, err := m.Acquire(ctx, "jobs/daily-report", 30*time.Second) // waits
//	if err != nil {
//		return err
//	}
//	defer l.Release(context.Background())
//	l.KeepAlive()
//	return run(l.Context(), l.Token()) // present l.Token() with every write
//
// TryAcquire makes one attempt and fails with ErrHeld (a *HeldError naming
// the owner and the expiry) when someone else holds the name. Acquire waits
// for it as long as its context allows.
//
// Each acquire call uses a fresh holder secret unless the call's WithHolder
// option gives one (to resume a lease after a restart, say). A call can
// also set its own lock-delay (WithLockDelay) and owner label
// (WithAcquireOwner); the Manager's options (Option) hold for every call.
// That is what makes a shared Manager a lock between goroutines: a store
// gives the same holder its grant back (so a retry after a lost answer is
// safe), so two goroutines using one holder would both "hold" the name.
//
// A *Lease reports the end of the lease through Context and Err, at the
// earliest of Release (ErrReleased), a renewal the store rejected (ErrLost),
// a fence rejection passed to Fenced (ErrLost and token.ErrStale) and the
// local deadline (ErrLost). KeepAlive renews in the background, about every
// TTL/3, in a goroutine that stops when the lease ends.
//
// # Electing a leader
//
// An Election is a lease name that replicas campaign for: the leader holds
// the lease, keeps it alive, and its fencing token is its term, greater for
// every new leader. Campaign waits until the caller leads and returns a
// *Term, whose Context ends the moment leadership is lost; Run does the
// same with callbacks (OnStartedLeading, OnStoppedLeading, OnNewLeader) in
// the manner of client-go's leaderelection; Leader and Observe tell
// followers who leads, with the value the leader published (an address,
// kept as the lease's owner label, never the holder secret). The leader
// presents its term with every write, so a leader deposed while paused is
// refused where the data lives:
//
//	m, err := lease.NewManager(store)
//	if err != nil {
//		return err
//	}
//	e := lease.NewElection(m, "billing/leader", 15*time.Second)
//	err = e.Run(ctx, "10.0.0.7:8080", lease.Callbacks{
//		OnStartedLeading: func(ctx context.Context, t *lease.Term) {
//			lead(ctx, t.Token()) // until ctx ends; every write carries t.Token()
//		},
//		OnNewLeader: func(l lease.Leader) { log.Printf("leader %s, term %d", l.Value, l.Token) },
//	})
//
// Errors are matched with errors.Is against the sentinels of this package
// (and token.ErrStale); they hold the same way in process and over HTTP.
//
// # Operating a store
//
// Every store also implements Revoker and HistoryReader. Revoke ends a
// lease its holder cannot release (a stuck job): the holder's next renew
// fails with a *RevokedError, which matches ErrLost and ErrRevoked, and
// its Context ends with that cause; the token is never handed out again.
// History reads the store's record of every grant, release, expiry, revoke
// and fenced refusal, each written in the transaction of its change, with
// the owner label and never the holder secret. Over HTTP, revoking needs
// the server's admin token, which is not the clients'.
package lease
