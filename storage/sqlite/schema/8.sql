-- Version 8: history rows are written in format 2 (storage/sqlite/history_codec.go:
-- a format byte, then each event's token and name as a difference from the
-- event before it in the row), about 8 bytes an event instead of about 50,
-- so that a batch's events rarely take a page of their own. Rows already
-- written stay in format 1, which is still read; no row is rewritten.
-- Older programs refuse a file at this version: they cannot read format 2.

SELECT 1;
