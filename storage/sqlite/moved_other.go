//go:build !linux

package sqlite

import "os"

type fileHere struct{ fi os.FileInfo }

func (s *Store) notePlace() error {
	fi, err := os.Stat(s.real)
	s.place = fileHere{fi}
	return err
}

func (s *Store) checkPlace() error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return movedError(s.path, err)
	}
	if !os.SameFile(fi, s.place.fi) {
		return movedError(s.path, nil)
	}
	return nil
}
