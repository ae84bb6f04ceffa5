-- Version 5: a grant to a waiter of another process may be claimed by lock
-- (storage/sqlite/claim.go): the waiter read-locks the claim byte of its row
-- and answers the grant without a write, its row still marked until its next
-- batch. Whoever takes a lapsed grant back must first write-lock that byte;
-- a version 4 program would not, and could take back a grant its waiter
-- already answered. The tables do not change: the version alone keeps older
-- programs away.

SELECT 1;
