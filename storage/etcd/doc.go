// Package etcd is a lease.Store, and a fenced key-value store, on an etcd
// cluster: the store for users who outgrow one machine. Its tokens are etcd
// revisions, which the cluster keeps increasing across restarts, failover and
// the loss of a minority of its members.
//
// # The keys
//
// Everything lives under a prefix (WithPrefix, default "picket"):
//
//	picket/leases/NAME        the lease: holder's SHA-256 | JSON (owner, TTL, lock-delay, expiry for people)
//	picket/delay/NAME         the lock-delay key of a lease that has one
//	picket/queue/NAME\x00ID   a waiter's place in the queue of NAME
//	picket/kv/KEY             a fenced value: its highest token, then the value
//	picket/floor              the token floor: the offset added to revisions (floor.go)
//
// A prefix must not contain "/": then no deployment's keys (prefix + "/" +
// ...) can be another's, as "x"'s fenced key "leases/a" was "x/kv"'s lease
// key "a".
//
// # A lease
//
// A grant is an etcd lease of the TTL, rounded up to whole seconds (etcd
// counts seconds and has a minimum TTL, 1.5 heartbeats of an election
// timeout, 2 s by default; Grant.TTL says what etcd granted; from 16 s the
// etcd lease is a second longer than Grant.TTL, see "The lease pool"), and one
// transaction that creates the lease key on it only if the name is free: no
// lease key, no lock-delay key, nobody queued. The token is the key's create
// revision, the revision of that transaction, plus the token floor's offset
// (zero until RaiseFloor, after a restore: see floor.go): greater than every
// revision before it, for any key, so greater than every token handed out.
//
// Renew keeps the etcd lease alive, then rewrites the key in a transaction
// that compares its create revision with the token and its etcd lease with
// the one kept alive; etcd refuses to keep alive an etcd lease that has
// expired, even before it has deleted its key, so an expired lease cannot be
// renewed. A new TTL attaches the key to a new etcd lease in that transaction
// without deleting it, so the token does not change; the old etcd lease is
// then revoked. Release deletes the key in a transaction that compares the
// create revision and the holder, then revokes the etcd lease. Expiry is
// etcd's: the leader revokes an etcd lease whose TTL has run out on its clock
// (within about half a second), which deletes the key. A new leader extends
// every etcd lease by a full TTL, so a failover makes leases last longer,
// never shorter. The lease handle's local deadline counts the TTL the caller
// asked for from before its request was sent, and etcd's expiry is never
// earlier than that.
//
// # The lease pool
//
// A clean release keeps its etcd lease (no key left on it) in a pool for the
// next grant of the same TTL, instead of a revoke now and a grant then (each
// a write through consensus). The store remembers, on a clock that counts suspend (CLOCK_BOOTTIME),
// the earliest instant etcd can expire each etcd lease it granted or kept
// alive: the send time of that request plus the etcd TTL. A pooled etcd
// lease serves a grant as it is while that instant is at least the grant's
// TTL after the grant's send time, and is kept alive first otherwise, so a
// grant's deadline is never later than etcd's end of its etcd lease. From
// 16 s on, etcd leases are asked one second longer than the TTL reported,
// so a pooled one serves the grants of the next second without a keep-alive:
// an acquire+release cycle is then two transactions. The price: a lease
// whose holder stops renewing may stay held up to a second past its TTL
// (plus etcd's revoke lag), at most 1/16 of the TTL.
//
// # Lock-delay
//
// An expired etcd lease deletes the lease key by itself, so nothing in the
// key can outlive it. A lease with a lock-delay therefore has a second key,
// picket/delay/NAME, on a second etcd lease whose TTL is the first one's
// plus the lock-delay (rounded up to whole seconds), created in the grant's
// transaction and kept alive (or moved) after the first at every renew. A
// grant requires both keys to be absent: after an expiry the name stays
// unavailable at least the lock-delay; a clean release deletes both at once.
//
// # Waiting
//
// As etcd's concurrency.Mutex: a waiter puts a key in the name's queue, on
// an etcd lease of its own kept alive while it waits; the create revisions
// give the order. A grant to a waiter requires that no queued key be older
// than its own, and a grant to anyone else that the queue be empty, so
// waiters are served in the order they came, whichever process or machine
// they wait in. Each waiter watches the one key in its way (the lease key,
// the lock-delay key or the queued key before its own) and tries again when
// it is deleted, or every second.
//
// # Fenced values
//
// A fenced value's key holds its highest token, as 16 hexadecimal digits,
// then a flag (a value, or deleted), then the value. Writing with token t is one transaction that compares the
// value with the digits of t+1 ("lower than": the highest token is at most
// t) and writes; a missing key is written at once. A token above the
// cluster's current revision was never issued and is refused.
//
// # Failures
//
// Every request is bounded by WithRequestTimeout and fails at once on a
// member without a leader. A cluster that cannot answer is an
// *UnavailableError (lease.ErrUnavailable); when the request was a write
// whose outcome is unknown, it says so (Unknown), and it is never reported
// as a definite failure (ErrHeld, ErrLost).
package etcd
