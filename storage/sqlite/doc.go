// Package sqlite is picket's default lease.Store: leases, the fencing-token
// counter and a fenced key-value table in one SQLite file.
//
// # The idea
//
// A token must never be handed out twice, not after kill -9, a restart or a
// power loss. So the counter lives in the same file and the same transaction
// as the lease row it is granted with, and no grant is acknowledged before
// that transaction has committed with synchronous=FULL (every acknowledged
// token is on disk). The counter is one row, separate from the lease rows:
// releasing or sweeping a lease never risks reuse. A trigger refuses any
// update that would lower it.
//
// Committing costs an fsync, so grants are batched: one writer goroutine per
// open Store takes every operation that is waiting (acquire, renew, release,
// put-fenced, sweep), runs them in ONE immediate transaction, each judged
// against the state the earlier ones left, commits once and only then answers
// every caller (group commit). A failed commit fails every operation of its
// batch, none of whose effects exist. A caller whose context ends while its
// operation waits for the writer gets the context's error and the operation
// is dropped; once the writer has taken it, it is committed with its batch
// or not at all, and the caller, who may have gone, cannot tell which (an
// acquire retried by the same holder gets the grant back).
//
// Reads (Get, List, GetFenced, Health) go to a separate pool of query-only
// connections and never wait behind the writer: the file is in WAL mode.
//
// Several processes on one host may share a file: SQLite's locks serialise
// their writers, busy_timeout waits, and the store retries a busy BEGIN
// itself, so SQLITE_BUSY never reaches a caller. The file must be on a local
// file system (WAL needs shared memory); overlayfs, whose locks do not reach
// its upper directory, is refused (ErrOverlay, unless WithOverlayRisk), and
// tmpfs opens with a warning: its tokens do not survive a reboot (fsys.go).
//
// Acquires that wait for a held name queue in the file (the waiters table),
// so the waiters of every process sharing it are served in the order they
// came: a release hands the name to the oldest in its own transaction. A
// waiter in another process is woken alone, by a datagram to its Store's
// socket, and claims the grant, which lapses if it does not (a frozen or
// killed waiter); a dead process's waiters are known from a lock the kernel
// dropped, and waiting costs no write and no timer but a read once a
// second. See wait.go, then bell.go and queue.go.
//
// # Time
//
// Only the store's clock (a lease.Clock, SystemClock by default) decides
// expiry. On Linux it reads CLOCK_BOOTTIME, which every process of one time
// namespace on the host shares, which counts suspend and which no wall-clock
// step moves; its epoch is the host's boot id plus the boottime offset of the
// process's time namespace, if any (unshare -T --boottime N). Every batch
// compares the file's epoch with its clock's, in its own transaction (and
// every read with the snapshot it reads); when they differ (the host
// rebooted, or another opener's clock is offset), the stored deadlines mean
// nothing, so every lease left in it is held again for its full TTL from that
// moment, and the store logs it. Two live openers in different epochs would
// do that to each other at every turn, and no lease would ever end, so Open
// refuses to join a file that another live opener uses in another epoch
// (ErrOtherEpoch, epochs.go); a system clock whose epoch cannot be read is
// refused too (ErrNoEpoch). Wall-clock time only renders deadlines for
// people (Grant.Expires).
//
// # Failing closed
//
// If a statement or a commit fails with an I/O error or corruption, the store
// cannot know whether the batch reached the disk. It stops granting: every
// later write fails with an error matching lease.ErrUnavailable and Health
// reports the failure. Reopening the file (a new process, or Open again)
// reads the durable state and goes on safely: a token whose commit was in
// doubt was never acknowledged.
//
// # Files
//
// While a store is open its state is three files: the database and the -wal
// and -shm beside it. Open proves that every live opener of the database
// inode uses the same -wal and -shm (ErrOtherWAL: a hard link, or a single
// file bind-mounted into a container; mount the directory instead), makes
// the files private (ErrNotPrivate if it cannot), and refuses a read-only
// file (ErrReadOnly), a corrupt one (ErrCorrupt, PRAGMA quick_check), another
// application's (ErrNotPicket), a copy made while the file was in use
// (ErrCopyInUse) and a backup (ErrBackupCopy) unless WithTokenFloor raises
// the counter past every token handed out since the copy. Close checkpoints
// and truncates the WAL, so a stopped store is one file; Backup writes a
// consistent copy of a live one; a floor also raises the fenced keys and is
// refused beside a running store (ErrInUse, floor.go). A store whose path
// stops naming its file (moved, deleted, replaced) fails closed (ErrMoved,
// moved.go). See inode.go, files.go, inuse.go and backup.go.
//
// # Fenced key-value table
//
// PutFenced stores a value under a key together with the fencing token that
// wrote it, and refuses a token lower than the highest the key has seen
// (token.ErrStale): it is the check a protected resource runs, here offered
// for small values kept next to the leases (see the HTTP API's /v1/kv).
package sqlite
