-- Version 5: the grant history and the revocations (issue 22).
--
-- history: every grant, release, expiry, revoke and fenced rejection, in
-- the order the store made them, written in the transaction of the change
-- it records: one row per batch (per 1024 events), its events encoded in a
-- blob, so that the history costs a batch one statement and one b-tree
-- insert, not a row per event (a row per event cost a fifth of the grant
-- throughput). Events are numbered densely: the row's seq is its first
-- event's, the next row's is seq + n. Never a holder secret: only the
-- owner label. Pruned by count and age, a rowid range at a time, off the
-- grant path (storage/sqlite/history.go). A query by name decodes the
-- rows, which a history bounded to about 100,000 events keeps in the
-- milliseconds.
CREATE TABLE history (
	seq    INTEGER PRIMARY KEY, -- the Seq of the row's first event; the next row's is seq + n
	at     INTEGER NOT NULL,    -- the batch's wall clock (no event of the row is later)
	n      INTEGER NOT NULL CHECK (n BETWEEN 1 AND 1024),
	events BLOB NOT NULL        -- n events, encoded (storage/sqlite/history_codec.go)
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
