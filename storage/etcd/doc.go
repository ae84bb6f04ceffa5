// Package etcd is a lease.Store, and a fenced key-value store, on an etcd
// cluster: the store for users who outgrow one machine. Its tokens are etcd
// revisions, which the cluster keeps increasing across restarts, failover and
// the loss of a minority of its members.
//
// # The keys
//
// Everything lives under a prefix (WithPrefix, default "picket"):
//
//	picket/leases/NAME              the lease: holder's SHA-256 | JSON (owner, TTL, lock-delay, expiry for people,
//	                                the floor's offset); "expired|" JSON once its lease has expired and its lock-delay runs
//	picket/queue/NAME\x00HASH/ID    a waiter's place in the queue of NAME (HASH: its holder's SHA-256; ID: its
//	                                store's id and a slot number, used again once the key is deleted: grants.go)
//	picket/kv/KEY                   a fenced value: its highest token, then the value
//	picket/floor                    the token floor: the offset added to revisions (floor.go)
//
// A prefix must not contain "/": then no deployment's keys (prefix + "/" +
// ...) can be another's, as "x"'s fenced key "leases/a" was "x/kv"'s lease
// key "a".
//
// # A lease
//
// A grant is one transaction that creates the lease key only if the name is
// free: no lease key, nobody queued (or, for a waiter, nobody queued before
// it), and the token floor unchanged since this store read it. The token is
// the key's create revision, the revision of that transaction, plus the
// token floor's offset (zero until RaiseFloor, after a restore: see
// floor.go), kept in the lease's record: greater than every revision before
// it, for any key, so greater than every token handed out. Grant.TTL is the
// TTL asked, to the millisecond. The lease key has no etcd lease.
//
// Renew reads the key and rewrites it in a transaction that compares its
// mod revision with the one read (so its create revision, the token, and
// its holder are the caller's); the rewrite changes the mod revision.
// Release deletes the key, and the holder's queue key if it came through the
// queue, in a transaction that compares the create revision and the holder
// (a store that made the grant without a queue key leaves that delete out).
// Neither it nor an acquire that does not wait carries an Else branch: a
// failed comparison is followed by a read.
//
// # Expiry, by observation
//
// A lease ends when a store has seen its key unchanged, at one mod revision,
// for the whole TTL, measured on that store's own suspend-aware clock
// (CLOCK_BOOTTIME) from the first moment it saw that revision; the store
// then ends it with a transaction that compares that revision, so a renewal
// or release in between wins. Stores look when they try to take the name
// (a waiter at the head of the queue watches the key and looks when its
// time is up), and at Get, List and Renew: Get and List leave out, and end,
// the leases their store has seen unchanged for a TTL.
//
// The holder's handle counts its deadline from before it sent the request
// that wrote the revision; an observer first sees that revision after it
// was written, and waits a full TTL from then. As long as the two clocks
// run at the same rate (no clock is compared with another), no observer
// ends a lease before its holder's deadline. etcd's lease revocation, which
// a leader stopped past an election timeout runs early once it is resumed
// (etcd issue 15247, on every version), decides nothing. The price: a
// holder that dies is replaced up to about two TTLs after its last renewal
// (its deadline, then a TTL of watching by an observer that came late).
// Every open store also sweeps: it reads a page of lease keys every 5 s, in
// turn, and ends what it has seen unchanged for its TTL, so the key of a
// name nobody asks for again does not stay for ever.
//
// # Lock-delay
//
// A lease with a lock-delay that expires is not deleted: the observer
// rewrites its key as an expired key (no holder's hash: neither Renew nor
// Release matches it), which blocks the name until a store has seen it
// unchanged for the lock-delay, and deletes it then. A clean release
// deletes the key at once.
//
// # Waiting
//
// As etcd's concurrency.Mutex: a waiter puts a key in the name's queue, in
// the transaction of its first attempt (which grants the name at once if it
// is free and nobody waits); the create revisions give the order. The
// queue keys of a store share one etcd lease, its session, kept alive while
// it has waiters, so the queue of a process that dies empties when its
// session expires. A grant to a waiter requires that no queued key be older
// than its own and that its own key still be there (a waiter whose key is
// gone queues again), and a grant to anyone else that the queue be empty,
// so waiters are served in the order they came, whichever process or
// machine they wait in. A waiter's queue key stays while it holds the name,
// and its release deletes it: each waiter watches the one key in its way
// (the queued key before its own, or the lease key for the head of the
// queue), which changes at a release, not at the grant before it. A watch
// starts at the current revision and, on a busy cluster, is followed by
// one read of its key (a watch from an older revision waits for etcd's
// sync of lagging watches, every 100 ms). An acquire that does not wait and
// finds the name free but reserved for the head of the queue (a release has
// just woken it) lets it pass, up to 2 s, and answers what it finds next:
// it watches both that waiter's queue key, which goes if the waiter leaves,
// and the lease key, which appears when the waiter takes the name (its
// queue key stays then). Every 2 s a waiter reads the key
// it waits on and its own queue key, in case the watch missed a change.
//
// # Fenced values
//
// A fenced value's key holds its highest token, as 16 hexadecimal digits,
// then a flag (a value, or deleted), then the value. Writing with token t is one transaction that compares the
// value with the digits of t+1 ("lower than": the highest token is at most
// t) and writes; a missing key is written at once. A token above the
// cluster's current revision was never issued and is refused.
//
// # Fencing inside etcd
//
// Data kept in the same cluster can be guarded by the lease itself:
// IsOwner(g) returns the comparisons (the ones Release makes) that hold
// exactly while g holds its name, for the If of a transaction of the
// caller's own, as etcd's concurrency.Mutex.IsOwner does. A lease past its
// TTL that no store has ended yet still holds them: nobody else can be
// granted the name before a store changes its key, so the guarded writes of
// two holders never interleave.
//
// # Failures
//
// Every request is bounded by WithRequestTimeout and fails at once on a
// member without a leader. A cluster that cannot answer is an
// *UnavailableError (lease.ErrUnavailable); when the request was a write
// whose outcome is unknown, it says so (Unknown), and it is never reported
// as a definite failure (ErrHeld, ErrLost).
package etcd
