package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// runBackup writes a consistent copy of a store, live or stopped:
//
//	picket backup [-db F] OUT
//
// The state of a store is three files while it is open (the database, its
// -wal and -shm), and the newest grants may be in the -wal alone: copy it
// with this command, never with cp.
func runBackup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "backup")
	var sf storeFlags
	sf.register(fs)
	setFlagHelp(fs, "db", DefaultDB, "the SQLite `file` of the store to copy (it may be in use)")
	if err := parse(fs, args, true); err != nil {
		return err
	}
	const copyFile = "backup copies an SQLite file (-db); a server backs up its own file, an etcd cluster with etcdctl snapshot save"
	kind, err := sf.local(fs, "backup", copyFile)
	if err != nil {
		return err
	}
	if kind == storeEtcd {
		return usagef("backup: -etcd: %s", copyFile)
	}
	if fs.NArg() != 1 {
		return usagef("backup: give one new output file: picket backup [-db F] OUT")
	}
	db := &sf.db
	if err := mustExist(*db); err != nil {
		return err
	}
	s, err := sqlite.Open(*db, overlayOption(sf.allowOverlay)...)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := s.Backup(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s: counter %d\n", *db, fs.Arg(0), n)
	fmt.Fprintf(e.stdout, "to use it: picket restore -token-floor N %s DB, with N above every token handed out since\n", fs.Arg(0))
	return nil
}

// runRestore makes a backup (or a copy made while its store was in use)
// usable again, above a token floor:
//
//	picket restore -token-floor N BACKUP DB
//
// Tokens handed out after the backup was taken are not in it, so the
// counter is raised to at least N, and every fenced key's token to at least
// N-1: give a floor above every token handed out since, such as the highest
// token your fenced resources have seen. Stop every store on DB first.
func runRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "restore")
	floor := fs.Uint64("token-floor", 0, "raise the token counter to at least `N`, and fenced keys to N-1: above every token handed out since the backup (required)")
	var etcdF etcdFlags
	etcdF.register(fs)
	if err := parse(fs, args, true); err != nil {
		return err
	}
	if etcdF.set() {
		return restoreEtcd(ctx, e, &etcdF, fs.NArg(), *floor)
	}
	if fs.NArg() != 2 {
		return usagef("restore: give the backup and a new database file: picket restore -token-floor N BACKUP DB")
	}
	if *floor == 0 {
		return usagef("restore: -token-floor N is required: a backup lacks every token handed out after it was taken, " +
			"so give N above all of them (the highest token your fenced resources have seen, for instance)")
	}
	if err := mustExist(fs.Arg(0)); err != nil {
		return err
	}
	n, err := sqlite.Restore(fs.Arg(0), fs.Arg(1), token.Token(*floor))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "restored %s to %s: counter %d, the next token is above it\n", fs.Arg(0), fs.Arg(1), n)
	return nil
}

// mustExist refuses a store file that does not exist: Open would create an
// empty one.
func mustExist(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return usagef("%s does not exist", path)
	} else if err != nil {
		return err
	}
	return nil
}

// restoreEtcd raises the token floor of an etcd cluster (picket restore
// -etcd E -token-floor N): after a snapshot restore or a new cluster at the
// same addresses, whose revisions start below tokens already handed out.
func restoreEtcd(ctx context.Context, e *env, f *etcdFlags, nargs int, floor uint64) error {
	if nargs != 0 {
		return usagef("restore: with -etcd, give no file: picket restore -etcd E -token-floor N")
	}
	if floor == 0 {
		return usagef("restore: -token-floor N is required: a restored or new etcd cluster's revisions start below " +
			"tokens already handed out, so give N above all of them (the highest token your fenced resources have seen, for instance)")
	}
	st, err := f.open()
	if err != nil {
		return err
	}
	defer st.Close()
	n, offset, err := st.RaiseFloor(ctx, token.Token(floor))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "etcd prefix %s: token floor %d (offset %d), the next token is above it\n", st.Prefix(), n, offset)
	return nil
}
