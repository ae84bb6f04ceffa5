package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// copyInUseError refuses a file whose in-use mark names a -wal that is not
// beside it, saying what may have happened and what recovers: a copy made
// while in use, or, when no -wal is beside it at all, possibly the original
// after another SQLite program (the sqlite3 shell) opened it after a crash,
// checkpointed the -wal into it and deleted it. That file is complete, but
// nothing in it tells it from a copy that lost its -wal, so Open refuses
// both and names the command that makes the original usable: a restore in
// place with its own counter as the floor.
func (s *Store) copyInUseError(ctx context.Context, inUse string) error {
	// MUTANT (controls/inuse-message): the old message, "copied while in
	// use" whatever is beside the file.
	if true {
		return fmt.Errorf("%w (it was last open with the -wal %s; the -wal beside it is %s): open the file where it was used, "+
			"or restore this copy with a token floor above every token used since (picket restore -token-floor N); "+
			"copy a live store with picket backup, never cp", ErrCopyInUse, inUse, s.walBefore)
	}
	var counter int64
	if err := s.w.conn.QueryRowContext(ctx, "SELECT value FROM counter WHERE id = 1").Scan(&counter); err != nil {
		return fmt.Errorf("%w (it was last open with the -wal %s; none is beside it now); read its counter: %v", ErrCopyInUse, inUse, err)
	}
	return fmt.Errorf("%w (it was last open with the -wal %s; none is beside it now). "+
		"If this is the original file and another SQLite program (the sqlite3 shell, say) opened it after picket stopped "+
		"or crashed, that program checkpointed the -wal into it and deleted it: the file is complete, and "+
		"`picket restore -token-floor %d %s %s` makes it usable again (%d is its token counter; every fenced key is "+
		"raised to at least %d too). If it was copied or moved without its -wal while in use (cp, not picket backup), "+
		"its newest grants are missing: restore it with a floor above every token used since "+
		"(picket restore -token-floor N), such as the highest token your fenced resources have seen",
		ErrCopyInUse, inUse, counter, shellQuote(s.path), shellQuote(s.path), counter, max(counter-1, 0))
}

// shellQuote quotes path for a POSIX shell when it needs it.
func shellQuote(path string) string {
	for _, r := range path {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r)) {
			return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
		}
	}
	return path
}
