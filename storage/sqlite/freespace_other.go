//go:build !unix

package sqlite

import "errors"

// freeBytes cannot measure the free space here: the store keeps its reserve
// (reserve.go) and gives it back on a failed commit, but does not start low.
func freeBytes(path string) (int64, error) {
	return 0, errors.New("free space: not measured on this system")
}
