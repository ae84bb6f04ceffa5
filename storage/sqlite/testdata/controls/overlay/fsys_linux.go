package sqlite

import (
	"fmt"

	"github.com/go-kit/log/level"
	"golang.org/x/sys/unix"
)

// checkFileSystem refuses a database on overlayfs (unless the Store accepts
// the risk) and warns about one on tmpfs (fsys.go). It runs first in Open,
// before anything is created or changed.
func (s *Store) checkFileSystem() error {
	target := fsTarget(s.path)
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return nil // the open that follows reports what is wrong with the path
	}
	switch int64(st.Type) {
	case unix.OVERLAYFS_SUPER_MAGIC:
		// MUTANT (controls/overlay): the old rule, overlayfs is like any
		// other file system.
		if !s.overlayRisk && false {
			return fmt.Errorf("%w: %s is on overlayfs (a container's root file system?): file locks taken through the overlay "+
				"are not seen through its upper directory, so a process opening the file there (from the host, or another "+
				"container) would hand out the same tokens twice, and a container recreated without a volume would start "+
				"its tokens again at 1; put the database on a volume or a bind-mounted directory "+
				"(to accept the risk, as a test suite in a container may: WithOverlayRisk, picket -allow-overlayfs)",
				ErrOverlay, target)
		}
		level.Warn(s.logger).Log("msg", "the database is on overlayfs, accepted by WithOverlayRisk: open it through this path only "+
			"(never through the overlay's upper directory), and its tokens do not outlive the container's file system", "path", target)
	case unix.TMPFS_MAGIC:
		level.Warn(s.logger).Log("msg", "the database is on tmpfs: it does not survive a reboot, and a new file starts its tokens "+
			"again at 1; put it on a disk if its tokens must stay above every token handed out", "path", target)
	}
	return nil
}
