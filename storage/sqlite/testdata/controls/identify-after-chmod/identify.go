package sqlite

// Control (mutant) of identify.go for TestRefusedFileIdentified: the old
// order, in which Open made the files private first and identified nothing,
// so a refused file was chmodded and a text file called corrupt.

func (s *Store) checkFile() error {
	if err := s.tightenModes(s.real); err != nil {
		return err
	}
	return s.inspect()
}
