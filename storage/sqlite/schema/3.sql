-- Version 3: the acquires waiting for a held name, in every process on the
-- file, in arrival order (seq). A release, or a batch that finds the name's
-- lease expired, hands the name to the oldest live row of any process in its
-- own transaction: it writes the lease and marks the row with the token it
-- granted (token > 0), and the waiting process reads it there. expires_at
-- (the store's clock) is refreshed by the waiting process; a row past it
-- belongs to a waiter that died or stopped waiting, and is skipped and
-- deleted. process names the Store that waits (random, per open).

CREATE TABLE waiters (
	seq           INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: a process may still name a deleted row
	name          TEXT NOT NULL,
	holder        TEXT NOT NULL,
	owner         TEXT NOT NULL,
	ttl_ms        INTEGER NOT NULL CHECK (ttl_ms > 0),
	lock_delay_ms INTEGER NOT NULL CHECK (lock_delay_ms >= 0),
	process       TEXT NOT NULL,
	expires_at    INTEGER NOT NULL,
	token         INTEGER NOT NULL DEFAULT 0 CHECK (token >= 0),
	lease_expires INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX waiters_by_name ON waiters (name, seq);
CREATE INDEX waiters_granted ON waiters (process) WHERE token > 0;
