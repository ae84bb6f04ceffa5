-- Version 8: history rows are written in format 2 (storage/sqlite/history_codec.go:
-- a format byte, then the events with each one's token and name a
-- difference from the event before it),
-- about 8 bytes an event instead of about 50, so that a batch's events
-- rarely take a page of their own. Rows already written stay in format 1,
-- which is still read; no row is rewritten: nothing to do here for it.
--
-- waiters.unsynced: the row was granted by a light batch (storage/sqlite/
-- queue.go), which commits with synchronous=NORMAL and syncs the -wal only
-- after its COMMIT: until then another process can read the grant although
-- it is not on disk. Whoever claims a row so marked syncs the -wal before
-- answering (its sync covers the granter's frames, which come before its
-- own), so that no token is answered that a power loss could take back
-- (TestPowerLossWaitingStores).
--
-- Older programs refuse a file at this version: they cannot read format 2.

ALTER TABLE waiters ADD COLUMN unsynced INTEGER NOT NULL DEFAULT 0 CHECK (unsynced IN (0, 1));
