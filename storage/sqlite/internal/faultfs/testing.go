package faultfs

import (
	"os"
	"testing"
)

// RequireEnv names the environment variable that, set to 1, turns the skip
// of MountT on a machine that cannot mount FUSE into a failure (for CI runs
// that must exercise the fault tests).
const RequireEnv = "PICKET_REQUIRE_FUSE"

// MountT mounts a file system in a new directory under tb.TempDir() and
// unmounts it when the test ends. If the machine cannot mount FUSE file
// systems, the test is skipped (or fails, if RequireEnv is 1).
func MountT(tb testing.TB) *FS {
	tb.Helper()
	dir := tb.TempDir() // its removal is registered first, so runs after Unmount
	f, err := Mount(dir)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%v (%s=1)", err, RequireEnv)
		}
		tb.Skipf("cannot mount a FUSE file system here: %v", err)
	}
	tb.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			tb.Error(err)
		}
	})
	return f
}
