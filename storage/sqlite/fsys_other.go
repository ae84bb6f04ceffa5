//go:build !linux

package sqlite

func (s *Store) checkFileSystem() error { return nil }
