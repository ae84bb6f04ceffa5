package sqlite

import (
	"context"
	"fmt"
	"math"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The ended table (schema 6 and 7): a free name's last token, for watches
// (watch.go), kept only for the names someone watches.
//
// A Watch marks its name before it reads it (markWatched: a row of token
// 0, one write per name for the life of the file); from that commit on,
// every batch that ends a lease on the name records its token (ended), in
// the same transaction. A watch that read after its mark therefore misses
// no end, and "free after 5" and "free after 7" differ even when the grant
// of 7 and its release both happened between two of its calls. A name
// nobody ever watched costs nothing: the batch's head reads whether the
// table has any row at all (batch.watched), and while it has none no
// batch writes or reads it. Once some name is marked, every lease that
// ends in the file costs one UPDATE, which changes nothing for a name that
// is not marked.
//
// Why not a trigger (schema 6): it wrote a row at every deletion of a lease
// row, watched or not, and even a trigger whose WHEN is false costs SQLite
// a sub-program and a statement journal at every release (about 2 µs per
// cycle, measured): the Go side knows which names it ends.

// endedReleased is the deadline a release records: later than any clock
// reading, so that the watch calls it released whenever it reads it.
const endedReleased = math.MaxInt64

// ended records that the lease tok on name ended (its deadline, or
// endedReleased for a release), if anyone ever watched a name in the file.
func (b *batch) ended(name string, tok token.Token, deadline int64) error {
	if !b.watched {
		return nil
	}
	if _, err := b.s.w.ended.ExecContext(b.ctx, int64(tok), deadline, name); err != nil {
		return fmt.Errorf("record the end of %q for its watches: %w", name, err)
	}
	return nil
}

// mark is an opMark's change: the name is watched from this batch on. A
// new mark beyond WithMaxWatched is refused (lease.ErrQuota): the rows
// stay for the life of the file, so without a bound a client could grow
// it a row per name it reads (issue 38).
func (b *batch) mark(o *op) (result, error) {
	if max := b.s.quota.MaxWatched; max > 0 {
		var n int
		var marked bool
		if err := b.s.w.conn.QueryRowContext(b.ctx, "SELECT (SELECT count(*) FROM ended), EXISTS (SELECT 1 FROM ended WHERE name = ?)",
			o.name).Scan(&n, &marked); err != nil {
			return result{}, fmt.Errorf("count watched names: %w", err)
		}
		if !marked && n >= max {
			return result{err: fmt.Errorf("sqlite: watch %q: %w: %d names watched, the most this store keeps", o.name, lease.ErrQuota, max)}, nil
		}
	}
	if _, err := b.s.w.markWatched.ExecContext(b.ctx, o.name); err != nil {
		return result{}, fmt.Errorf("mark %q watched: %w", o.name, err)
	}
	b.watched = true
	return result{}, nil
}

// markWatched marks name watched (a no-op if it is): from its commit on,
// every lease that ends on name leaves its token in the ended table.
func (s *Store) markWatched(ctx context.Context, name string) error {
	o := newOp(opMark)
	o.name = name
	return s.submit(ctx, o).err
}
