package sqlite

import (
	"errors"
	"os"
	"path/filepath"
)

// Where the file lives.
//
// overlayfs (a container's root file system) is refused: file locks taken
// through the overlay are not seen through its upper directory, so a
// process on the host opening the file there and a store in the container
// would share the data, the -wal and the -shm without sharing SQLite's
// locks or picket's (the one-WAL proof): both granted the same tokens, by
// the thousand, under load. And a container recreated without a volume
// starts its tokens again at 1. WithOverlayRisk accepts that risk (a test
// suite run inside a container) and logs it.
//
// tmpfs is allowed (many machines keep /tmp there, and tests open stores in
// it) with a warning: its files, and so its tokens, do not survive a
// reboot.

// ErrOverlay is returned by Open for a database on overlayfs, unless
// WithOverlayRisk accepts it.
var ErrOverlay = errors.New("sqlite: the database is on overlayfs")

// WithOverlayRisk lets Open use a database on overlayfs, and logs a
// warning: only one path to the file (never the upper directory from the
// host or another container) may be used, and the tokens do not outlive
// the container's file system. For a test suite run inside a container;
// a service puts its database on a volume or a bind-mounted directory.
func WithOverlayRisk() Option { return func(cfg *config) { cfg.overlayRisk = true } }

// fsTarget is what the file system checks look at: the file, or its
// directory while the file does not exist yet (it is then never created on
// a refused file system).
func fsTarget(path string) string {
	if _, err := os.Stat(path); err == nil {
		return path
	}
	return filepath.Dir(path)
}
