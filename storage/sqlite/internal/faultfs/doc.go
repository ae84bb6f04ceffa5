// Package faultfs is a test file system that can lose power, fail fsync and
// run out of space, mounted with FUSE so that an unmodified SQLite (or any
// program) does its I/O through it.
//
// # The idea
//
// A disk keeps what was synced; everything else is in a cache that a power
// loss wipes. faultfs keeps both versions of every file in memory: the live
// bytes (what reads return, what writes change) and the durable bytes (the
// live bytes as they were at the file's last fsync or fdatasync). The one
// directory it holds (the mount point; there are no subdirectories) keeps
// two versions of its entries the same way: the live names, and the names as
// they were at the directory's last fsync.
//
// PowerLoss is the machine losing power with every process on it: each file
// goes back to its durable bytes, and the directory to its durable entries.
// So:
//
//   - a write not followed by an fsync of its file is lost (all of it: the
//     model keeps no torn or partial writes, it only loses);
//   - a file created and never synced comes back empty, if its name survives;
//   - a name created, removed or replaced since the directory's last fsync
//     is undone: a new file vanishes, a removed one comes back with its
//     durable bytes (strict POSIX: only fsync on the directory makes a change
//     to it durable; ext4 and XFS are kinder, making a new file's name
//     durable with the file's own fsync, so this rule is the harsher one).
//
// TornPowerLoss is harsher: each unsynced write (sector by sector), each
// unsynced change of a file's length and each unsynced change of a name
// survives or not, at random, independently, as when a disk's cache writes
// some blocks back out of order before the power goes.
//
// SQLite asks for exactly what this model needs: with synchronous=FULL it
// fsyncs the WAL at every commit, and the directory after it creates the WAL
// (or a rollback journal) before that file's first sync.
//
// FailSync makes every fsync (of a file or of the directory) fail with the
// given errno and change nothing: what it should have made durable stays
// live only, and is lost at the next PowerLoss. NoSpace makes every write
// that would grow a file fail with ENOSPC, writes inside a file's size still
// succeeding (blocks already allocated), as on a full disk.
//
// # Caches
//
// The mount asks the kernel to cache no names and no attributes, and every
// open drops the file's cached pages (no FOPEN_KEEP_CACHE). Writes go
// through to faultfs at once (no writeback cache), so a write() that
// returned is in the live bytes. PowerLoss also tells the kernel to drop
// what it cached of each file. A process that still has a reverted file open
// or mapped sees undefined contents: kill the processes using the mount
// before PowerLoss, as a power loss would.
//
// File locks are the kernel's own (faultfs does not ask for them to be
// forwarded), so SQLite's POSIX locks work across processes. Shared memory
// maps (SQLite's -shm file) work through the kernel's page cache.
//
// Mounting needs /dev/fuse and either root (faultfs calls mount(2) itself)
// or the fusermount helper.
package faultfs
