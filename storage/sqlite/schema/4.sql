-- Version 4: a waiter's liveness is kept by the kernel, not by the row. A
-- waiting process holds a lock on a byte of the database file named after
-- its process id (storage/sqlite/bell.go), which the kernel drops when the
-- process dies; rows are no longer refreshed, and expires_at goes. A row
-- granted to a waiter of another process is marked with the token and the
-- lease's expiry (lease_expires, as before). granted_by
-- names the Store that made the grant: a grant not claimed in time is taken
-- back by that Store, or by anyone once that Store is dead. Older programs
-- refuse a file at this version (they would take every row for dead).

ALTER TABLE waiters DROP COLUMN expires_at;
ALTER TABLE waiters ADD COLUMN granted_by TEXT NOT NULL DEFAULT '';
