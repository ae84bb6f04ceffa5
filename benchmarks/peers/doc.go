// Package peers measures picket side by side with the lock services users
// already run: Redis, etcd and PostgreSQL, on the same machine, in the same
// run, through one workload definition.
//
// # The idea
//
// The workloads are those of internal/bench (the runner behind "picket
// bench"): acquire+release cycles on distinct names, fresh grants that are
// never released, and one hot name every client waits for. That runner
// drives a lease.Store, so each peer here is a small lease.Store adapter that
// does what a careful user of that system would do to get a lease with a
// fencing token:
//
//   - Redis: one Lua script, SET name holder NX PX ttl and INCR of a token
//     counter; release is a compare-and-delete script (GET == holder, DEL).
//   - etcd: a concurrency.Session per client (an etcd lease with keep-alive)
//     and a concurrency.Mutex per name; the token is the create revision of
//     the mutex's key (what Mutex.IsOwner compares).
//   - PostgreSQL: one INSERT ... ON CONFLICT ... DO UPDATE ... WHERE expired
//     RETURNING token statement whose token comes from a counter row bumped
//     by a CTE of the same statement; release is one DELETE of the row with
//     that name, holder and token.
//   - picket itself: storage/sqlite embedded, and a separate "picket serve"
//     process through httpapi.Client.
//
// Only etcd and picket can wait for a name; the Redis and PostgreSQL
// adapters poll (every 1–2 ms) while a hot name is held, as lock libraries
// on them do.
//
// Two baselines frame the rows: a trivial net/http handler in a process of
// its own, served through the same Go HTTP client and connection pool as
// picket over HTTP (the ceiling of HTTP on the machine), and the fsync floor
// (one 4 KiB write and fdatasync on the disk the data lives on: no durable
// grant costs less).
//
// Every Target says how durable its acknowledgements are; rows that are
// not durable (Redis appendfsync everysec, PostgreSQL synchronous_commit
// off) say so on every line of the table.
//
// Run runs a list of targets and returns their rows; WriteMarkdown and
// WriteChart render them. The command in cmd/peers and the script run.sh
// start the servers, run the suite and write the table and the chart.
package peers
