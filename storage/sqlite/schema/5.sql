-- Version 5: the grant history and the revocations (issue 22).
--
-- history: every grant, release, expiry, revoke and fenced rejection, in
-- the order the store made them (seq), written in the transaction of the
-- change it records. at is wall-clock Unix nanoseconds, for people (for an
-- expiry: the lease's deadline). Never a holder secret: only the owner
-- label. Pruned by count and age, a chunk at a time, off the grant path
-- (storage/sqlite/history.go). No index but the rowid: one b-tree write per
-- event keeps the grant path cheap; a query by name scans, which a history
-- bounded to about 100,000 rows keeps in the milliseconds.
CREATE TABLE history (
	seq        INTEGER PRIMARY KEY,
	at         INTEGER NOT NULL,
	kind       TEXT NOT NULL CHECK (kind IN ('grant', 'release', 'expire', 'revoke', 'fenced')),
	name       TEXT NOT NULL,
	token      INTEGER NOT NULL,
	owner      TEXT NOT NULL,
	reason     TEXT NOT NULL,
	revoked_by TEXT NOT NULL
) STRICT;

-- revoked: the last revocation of each name, so that the revoked holder's
-- next renew or release is told "revoked", not merely "lost". Kept a day
-- (lease.MaxTTL: no lease lives longer), whatever the history keeps.
CREATE TABLE revoked (
	name       TEXT PRIMARY KEY,
	token      INTEGER NOT NULL,
	reason     TEXT NOT NULL,
	revoked_by TEXT NOT NULL,
	at         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
