package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/picketlock/picket/lease"
)

// quota bounds what a store holds, so that a client (or a bug) cannot grow
// the file without end (WithMaxLeases, WithMaxKVKeys, WithMaxKVBytes). A
// zero field means no bound. A write that would go over a bound fails with
// an error matching lease.ErrQuota and writes nothing; the check runs inside
// the write's own transaction, so it holds however many writers race.
type quota struct {
	MaxLeases  int
	MaxKVKeys  int
	MaxKVBytes int64
	MaxWatched int
}

// WithMaxLeases bounds the live leases: an acquire that would grant a new
// lease beyond n is refused with an error matching lease.ErrQuota (a
// holder's re-acquire, a renew and a release always pass). Zero, the
// default, means no bound; negative is lease.ErrInvalid from Open.
func WithMaxLeases(n int) Option { return func(cfg *config) { cfg.quota.MaxLeases = n } }

// WithMaxKVKeys bounds the fenced keys. A deleted key keeps its row (it
// keeps its highest token) and still counts. Zero, the default, means no
// bound; negative is lease.ErrInvalid from Open.
func WithMaxKVKeys(n int) Option { return func(cfg *config) { cfg.quota.MaxKVKeys = n } }

// WithMaxKVBytes bounds the bytes of fenced keys and values together. Zero,
// the default, means no bound; negative is lease.ErrInvalid from Open.
func WithMaxKVBytes(n int64) Option { return func(cfg *config) { cfg.quota.MaxKVBytes = n } }

// WithMaxWatched bounds the names ever watched: a watch of a name marks
// it with a row of the ended table (ended.go) that stays, so that no end
// of a lease on it is missed between two calls; a first read (Watch with
// a zero after, GET /v1/leases/NAME?wait=0s) of a new name beyond n such
// rows is refused with an error matching lease.ErrQuota and writes
// nothing, while names already marked are watched as ever. Zero, the
// default, means no bound; negative is lease.ErrInvalid from Open.
func WithMaxWatched(n int) Option { return func(cfg *config) { cfg.quota.MaxWatched = n } }

func (q quota) validate() error {
	if q.MaxLeases < 0 || q.MaxKVKeys < 0 || q.MaxKVBytes < 0 || q.MaxWatched < 0 {
		return invalidf("quota %+v has a negative bound", q)
	}
	return nil
}

func (q quota) kv() bool { return q.MaxKVKeys > 0 || q.MaxKVBytes > 0 }

// kvUsage is what the fenced keys hold.
type kvUsage struct {
	keys, bytes int64
}

// kvCache is the usage of the fenced keys as of the writer's last commit,
// valid while the file's data_version says that no other connection has
// committed since (SQLite does not change it for the connection's own
// commits). Only the writer goroutine uses it.
type kvCache struct {
	valid   bool
	version int64
	usage   kvUsage
}

// batchQuota is what one batch knows of the quotas, learnt lazily: the live
// leases and the fenced keys' usage as of the start of the batch, kept up to
// date by the batch's own writes.
type batchQuota struct {
	liveKnown bool
	live      int

	kvKnown   bool
	kvVersion int64
	kv        kvUsage
}

// acquireInQuota is acquire within WithMaxLeases. At the bound, an
// acquire on a name with a live lease goes ahead (a re-acquire of the
// holder's own, or a held answer) and any other is refused.
func (b *batch) acquireInQuota(o *op) (result, error) {
	max := b.s.quota.MaxLeases
	if max <= 0 {
		return b.acquire(o)
	}
	if !b.q.liveKnown {
		if err := b.s.w.conn.QueryRowContext(b.ctx, "SELECT COUNT(*) FROM leases WHERE expires_at > ?",
			int64(b.now)).Scan(&b.q.live); err != nil {
			return result{}, fmt.Errorf("count live leases: %w", err)
		}
		b.q.liveKnown = true
	}
	if b.q.live >= max {
		r, found, err := b.row(o.name)
		if err != nil {
			return result{}, err
		}
		if !found || b.now >= r.expires {
			return result{err: fmt.Errorf("sqlite: acquire %q: %w: %d live leases, the most this store keeps",
				o.name, lease.ErrQuota, max)}, nil
		}
	}
	before := b.counter
	res, err := b.acquire(o)
	if err == nil && res.err == nil && res.grant.Token > before {
		b.q.live++ // a new lease; a re-acquire keeps its token
	}
	return res, err
}

// releaseCounted is release, keeping the batch's count of live leases,
// and then the hand-over to the oldest waiter, if any (queue.go). A batch
// that knows the file holds no waiters row (queued) asks for none.
func (b *batch) releaseCounted(o *op) (result, error) {
	res, err := b.release(o)
	if err != nil || res.err != nil {
		return res, err
	}
	if b.q.liveKnown {
		b.q.live--
	}
	if b.queued() {
		_, err = b.serve(o.name)
	}
	return res, err
}

// kvQuota checks a fenced write of a value of size bytes (0 for a delete)
// against WithMaxKVKeys and WithMaxKVBytes, and counts it if it fits.
// It returns a result to answer with when the write is refused: over the
// quota, or stale (the write would not happen anyway).
func (b *batch) kvQuota(o *op, size int64) (*result, error) {
	u, err := b.kvUsage()
	if err != nil {
		return nil, err
	}
	var oldLen, highest int64
	found := true
	err = b.s.w.conn.QueryRowContext(b.ctx, "SELECT length(value), token FROM kv WHERE key = ?", o.name).Scan(&oldLen, &highest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		found = false
	case err != nil:
		return nil, fmt.Errorf("read %q: %w", o.name, err)
	}
	if found && int64(o.tok) < highest {
		r, err := b.stale(o)
		return &r, err
	}
	d := kvUsage{bytes: size - oldLen}
	if !found {
		d = kvUsage{keys: 1, bytes: int64(len(o.name)) + size}
	}
	q := b.s.quota
	if (d.keys > 0 && q.MaxKVKeys > 0 && u.keys+d.keys > int64(q.MaxKVKeys)) ||
		(d.bytes > 0 && q.MaxKVBytes > 0 && u.bytes+d.bytes > q.MaxKVBytes) {
		return &result{err: fmt.Errorf("sqlite: write %q: %w: the fenced keys hold %d keys and %d bytes; the quota is %d keys, %d bytes",
			o.name, lease.ErrQuota, u.keys, u.bytes, q.MaxKVKeys, q.MaxKVBytes)}, nil
	}
	u.keys += d.keys
	u.bytes += d.bytes
	return nil, nil
}

// kvUsage returns the batch's usage of the fenced keys, reading it from the
// cache when no other connection has committed since the writer's last
// commit, and from the table otherwise.
func (b *batch) kvUsage() (*kvUsage, error) {
	if b.q.kvKnown {
		return &b.q.kv, nil
	}
	var v int64
	if err := b.s.w.conn.QueryRowContext(b.ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return nil, fmt.Errorf("read data version: %w", err)
	}
	if c := &b.s.kvCache; c.valid && c.version == v {
		b.q.kv = c.usage
	} else if err := b.s.w.conn.QueryRowContext(b.ctx,
		"SELECT COUNT(*), COALESCE(SUM(length(key) + length(value)), 0) FROM kv").Scan(&b.q.kv.keys, &b.q.kv.bytes); err != nil {
		return nil, fmt.Errorf("read usage of the fenced keys: %w", err)
	}
	b.q.kvKnown, b.q.kvVersion = true, v
	return &b.q.kv, nil
}

// kvCommitted keeps the usage a committed batch learnt.
func (s *Store) kvCommitted(q *batchQuota) {
	if q.kvKnown {
		s.kvCache = kvCache{valid: true, version: q.kvVersion, usage: q.kv}
	}
}
