//go:build unix

package sqlite

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// freeBytes is the space the store's process may still write on the file
// system of path's directory (reserve.go): the blocks free to unprivileged
// users, or every free block for root (who may write into the blocks ext4
// keeps back).
func freeBytes(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, err
	}
	blocks := int64(st.Bavail)
	if os.Geteuid() == 0 {
		blocks = int64(st.Bfree)
	}
	return blocks * int64(st.Bsize), nil
}
