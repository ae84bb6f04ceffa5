// Package redisfence fences writes to a Redis that holds your data (not
// picket's locks): a SET, HSET or DEL of your key runs in one server-side
// Lua script that compares the writer's fencing token with the highest the
// key has seen and writes only if it is not lower. Redis runs a script
// whole, with no other command in between, so the compare and the write are
// one atomic operation of the data's own system — never a read followed by
// an unconditional write.
//
// The highest token lives in a key of its own beside the data, FenceKey(key)
// (key + ":picket-fence", in the same Redis Cluster slot: see FenceKey). It
// never expires and a fenced Del keeps it, so a paused holder's later write
// with a lower token stays refused after the key is gone. Write the key only
// through this package while it is fenced: a plain SET or DEL of the data
// key bypasses the fence (the fence survives it, the data does not).
//
// # What Redis must guarantee for the fence to hold
//
//   - Atomic scripts: every Redis since 2.6 (and Valkey, KeyDB, Dragonfly)
//     runs EVAL/EVALSHA without interleaving; the helpers need Lua.
//   - Durability of the fence key: a fence that a crash takes back lets a
//     lower token in again. Run Redis with appendonly yes and appendfsync
//     always for an acknowledged write to survive a power loss; with
//     everysec, up to a second of writes (and their fences) can be lost; with
//     no persistence, a restart forgets every fence.
//   - Replication and failover: Redis replicates asynchronously, so a
//     failover can lose acknowledged writes, fences included. Where that
//     matters, follow each write with WAIT (replicas) or WAITAOF (Redis 7.2+:
//     fsynced locally and on replicas) and treat a short count as an unknown
//     outcome. Redis Cluster moves slots whole, so a key and its fence always
//     move together.
//
// A stale token is a *token.StaleError (matching token.ErrStale), with the
// highest token seen: the writer must stop. A zero token, one above
// token.Max, an empty key or a key no fence can share a cluster slot with is
// an error matching token.ErrInvalid, and nothing is sent.
package redisfence
