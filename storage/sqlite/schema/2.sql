-- Version 2: lock-delay belongs to the lease. lock_delay_ms is how long the
-- name stays unavailable after this lease expires (not after a release),
-- chosen by the acquire that granted it (or its opener's default) and
-- honoured by every opener of the file. Rows from version 1 have none.

ALTER TABLE leases ADD COLUMN lock_delay_ms INTEGER NOT NULL DEFAULT 0 CHECK (lock_delay_ms >= 0);
