// Package token enforces fencing tokens where the protected data lives.
//
// # Why a lease is not enough
//
// A distributed lock is a lease: it ends on its own after a time to live, so
// that a crashed holder does not block everyone forever. But a holder that is
// only paused — a long garbage collection, a live-migrated virtual machine, a
// suspended laptop — cannot tell that its lease ran out. Meanwhile the lease
// went to someone else, who wrote. When the paused holder wakes it still
// believes it holds the lock and writes too, over the newer data. Checking
// the lease just before writing does not help: the pause can fall between the
// check and the write. Nothing the writer does on its own side closes that
// window; the check must be made by the resource that receives the write.
//
// # Fencing
//
// Every grant of a lease comes with a token, a number greater than every token
// granted before it. The writer sends its token with each write. The resource
// keeps the highest token it has seen and, in the same operation as the write
// (one statement, one lock, one transaction), rejects a write with a lower
// token. An equal token is accepted: the current holder may write many times.
// When the paused holder wakes and writes with its old token, the resource
// has already seen the newer holder's higher token and refuses. The rejection
// is final: the writer has been overtaken and must stop its work, not retry.
//
// Safety therefore rests on the tokens, not on clocks: a wrong clock can only
// end a lease early or late, and the fence still rejects the stale writer.
//
// This package knows nothing of leases; a service that only enforces tokens
// imports it alone. Tokens come from a lease store such as picket's.
//
// # API
//
// Token is a fencing token; zero means "no token", and Max (2^53-1) is the
// largest, so that every JSON client reads tokens exactly. Parse and
// Token.String convert the decimal text form.
//
// Fence enforces tokens in memory, per resource name: Fence.Admit checks and
// records a token; Fence.Do also runs the write while holding the check, so
// that a writer cannot be overtaken between the two. A Fence lives in one
// process and forgets when it exits: replicas of a service, and data that
// outlives the process, keep the fence with the data.
//
// In the caller's own SQL database (SQLite, PostgreSQL, or MySQL and
// MariaDB) the check is one
// statement inside the caller's transaction. Guard keeps a table of
// (resource, highest token) rows: Guard.Admit checks and raises one;
// Guard.CreateTable makes the table, or refuses one of another layout. Rows
// fences rows that carry their own token in a fence column: Rows.Upsert
// inserts or updates one, Rows.Update updates an existing one. CheckUpdate
// turns the result of a fenced UPDATE written by hand into an error.
// Transact runs the caller's transaction and runs it again after a
// serialization failure (PostgreSQL at REPEATABLE READ or SERIALIZABLE; a
// deadlock or a lock wait timeout on MySQL). The package imports no driver:
// its MySQL tests and examples live in the module token/mysqltest. Each
// helper checks the token before it touches the database.
//
// For HTTP, Header names the Fencing-Token header; FromRequest and Set read
// and write it, and Middleware fences a handler with a Fence, answering 409
// to a stale token.
//
// # Errors
//
// A stale token gives a *StaleError, which matches ErrStale: the only error
// that means "a newer holder exists: stop". Malformed input — the zero token
// (ErrZero), a missing header (ErrMissing), text that is not a token, a
// table of another layout — matches ErrInvalid. A missing row (ErrNotFound),
// an UPDATE that matched no row (ErrNoMatch), a serialization failure
// (ErrConflict) and a busy SQLite database (ErrBusy) are errors of their own,
// each saying what to do; none matches ErrStale. Match with errors.Is and
// errors.As, never by text.
package token
