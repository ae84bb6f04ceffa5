-- Version 1: leases, the token counter, the fenced key-value table.
-- Times in leases are readings of the store's clock (lease.Clock.Now), in
-- nanoseconds, valid in the epoch stored in meta; kv.updated_at is wall-clock
-- Unix nanoseconds, for people.

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('epoch', '');

-- The token counter: the highest token ever handed out. One row, never
-- lowered, never deleted; tokens stay below 2^53.
CREATE TABLE counter (
	id    INTEGER PRIMARY KEY CHECK (id = 1),
	value INTEGER NOT NULL CHECK (value BETWEEN 0 AND 9007199254740991)
) STRICT;

INSERT INTO counter (id, value) VALUES (1, 0);

CREATE TRIGGER counter_never_decreases BEFORE UPDATE ON counter
WHEN NEW.value < OLD.value OR NEW.id <> OLD.id
BEGIN
	SELECT RAISE(ABORT, 'picket: the token counter never decreases');
END;

CREATE TRIGGER counter_never_deleted BEFORE DELETE ON counter
BEGIN
	SELECT RAISE(ABORT, 'picket: the token counter is never deleted');
END;

-- One row per unreleased lease. An expired row stays until it is taken over
-- or swept; a release deletes it.
CREATE TABLE leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	owner      TEXT NOT NULL,
	token      INTEGER NOT NULL CHECK (token > 0),
	ttl_ms     INTEGER NOT NULL CHECK (ttl_ms > 0),
	granted_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The highest token each key has seen, with the value written under it.
-- (Values can be large, so this table keeps its rowid.)
CREATE TABLE kv (
	key        TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	token      INTEGER NOT NULL CHECK (token > 0),
	updated_at INTEGER NOT NULL
) STRICT;
