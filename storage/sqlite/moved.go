package sqlite

import (
	"errors"
	"fmt"
)

// A store notices when its path no longer names its file.
//
// A Store keeps writing to the file it opened, whatever happens to the
// path: after `mv picket.db elsewhere` (and a restore to the old path, a
// second store there) it would go on granting on the moved file, healthy,
// beside the store on the new one: one name held twice, tokens given out
// on both. So before each batch the writer checks that the path still
// names the file it opened (a stat, a microsecond or two beside a commit's
// fsync) and, if not, fails closed: every write refused, Health saying
// why, the log too. Reads go on answering from the moved file.

// ErrMoved is matched by the FailedError of a store whose path no longer
// names the file it opened: the file was moved, deleted or replaced.
var ErrMoved = errors.New("sqlite: the database file was moved, deleted or replaced while the store had it open")

// movedError says what the writer found at the store's path.
func movedError(path string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %s: %v; the store refuses every write until it is reopened: "+
			"stop it before moving its file (picket backup copies a live store)", ErrMoved, path, err)
	}
	return fmt.Errorf("%w: %s is another file now; the store refuses every write until it is reopened: "+
		"stop it before moving or replacing its file (picket backup copies a live store)", ErrMoved, path)
}
