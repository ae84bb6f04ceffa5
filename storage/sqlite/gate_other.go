//go:build !linux

package sqlite

import "os"

// descriptor: no descriptor of the file is kept on this system.
func (m *member) descriptor() *os.File { return nil }
