-- Version 7: the ended table (schema 6) is kept only for the names someone
-- watches. A watch (storage/sqlite/watch.go) marks its name before it reads
-- it, with a row of token 0; the writer records the token of every lease
-- that ends on a marked name (a release, a revoke, a sweep, a grant to a
-- waiter taken back unclaimed) in the batch that ends it, and nothing while
-- the table is empty (storage/sqlite/ended.go). The trigger of schema 6
-- wrote a row at every deletion of a lease row, watched or not: about a
-- sixth of the writer's CPU per acquire+release cycle.
--
-- The rows a file at version 6 holds stay, as marks: their names keep
-- their last token, so a watch that spans the upgrade misses nothing on
-- them. ended.expires_at is the ended lease's deadline; a release writes
-- the largest integer (it ended before its deadline, whenever it is read).
-- Older programs refuse a file at this version.

DROP TRIGGER leases_ended;
