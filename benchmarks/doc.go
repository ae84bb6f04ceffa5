// Package benchmarks holds the go test benchmarks of picket's headline
// number, grant throughput. The runner behind "picket bench" and the peer
// comparison is internal/bench; this package has no API of its own.
//
// # The idea
//
// A grant is a lease row and a token counter written in one transaction,
// and picket acknowledges no grant before that transaction is on disk. One
// commit costs one fsync, so a store that commits each grant alone can hand
// out no more grants per second than the disk can sync, however many
// clients ask. storage/sqlite batches the grants that wait at the same
// moment into one transaction (group commit): the fsync is shared, and
// throughput grows with the number of clients until the CPU spent per grant
// inside the batch is the limit. The benchmarks show how close that comes to
// the two ceilings around it: a store without durability (storage/memory)
// and one commit per grant on the same disk and settings.
//
// Three workloads, each run with a number of concurrent clients:
//
//   - Distinct: each client acquires and releases its own name, over and
//     over. One cycle is one grant (with a new token) plus one release: two
//     durable writes. Reported as cycles per second.
//   - Fresh: each client acquires a new name every time and never releases
//     it: grants per second, one durable write each, and the lease table
//     grows.
//   - Hot: every client acquires the same name, waiting for it (the store's
//     own wait, as lease.Manager.Acquire asks for), and releases it at once.
//     What counts is the hand-over: the time from the holder sending its
//     release to the next holder receiving its grant, and whether every
//     client gets its turn (the least served client's share of the grants
//     over the fair share).
//
// Latency is that of one grant (the Acquire call) in the distinct and fresh
// workloads, and the hand-over in the hot one: p50 and p99 from a
// log-linear Histogram (about 3% resolution, a few kilobytes per client).
//
// # The benchmarks
//
// The go test benchmarks in this directory (go test -bench . ./benchmarks)
// measure the same workloads as internal/bench with b.RunParallel over
// storage/sqlite, over HTTP on loopback and over storage/memory, next to a
// bare commit loop and a bare fsync on the same disk; see
// docs/performance.md. benchmarks/peers compares picket with its peers
// (etcd, Redis, PostgreSQL) through the same runner.
package benchmarks
