package sqlite

import "context"

// SetTestHook sets the function the writer goroutine calls at its named
// points (see hooks.go). Call it before any Store opens, in a process of its
// own: the crash tests' children.
func SetTestHook(h func(point string)) { testHook = h }

// ExecWriter runs query on s's writer connection, for tests that need what
// no option offers: PRAGMA synchronous = NORMAL for the power-loss control,
// PRAGMA max_page_count for a full file. Call it while no operation is in
// flight; database/sql serialises it with the writer's statements.
func ExecWriter(s *Store, query string) error {
	_, err := s.w.conn.ExecContext(context.Background(), query)
	return err
}

// QueryWriter runs query, which returns one integer, on s's writer
// connection (PRAGMA page_count, PRAGMA synchronous, ...).
func QueryWriter(s *Store, query string) (int64, error) {
	var n int64
	err := s.w.conn.QueryRowContext(context.Background(), query).Scan(&n)
	return n, err
}

// SchemaVersion is the newest schema version this program knows.
const SchemaVersion = schemaVersion
