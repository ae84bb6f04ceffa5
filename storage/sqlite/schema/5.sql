-- Version 5: watching (storage/sqlite/watch.go). A free name keeps the
-- token of the last lease that ended on it, so that a watcher that knew
-- "free after token 5" sees "free after token 7" when a grant of 7 and its
-- release both happened between two of its calls. The trigger fills it on
-- every deletion of a lease row (a release, a sweep of expired rows), so
-- the grant path writes nothing more; expires_at is the ended lease's
-- deadline (a row gone before it was released). Older programs refuse a
-- file at this version.

CREATE TABLE ended (
	name       TEXT PRIMARY KEY,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TRIGGER leases_ended AFTER DELETE ON leases BEGIN
	INSERT INTO ended (name, token, expires_at) VALUES (old.name, old.token, old.expires_at)
		ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at;
END;
