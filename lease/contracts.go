package lease

import (
	"context"
	"time"

	"github.com/picketlock/picket/token"
)

// The capabilities a store may have beside Store. Each is declared here, in
// the package every store imports, so that a store implements it without
// importing whoever uses it (httpapi's server, the picket command): they
// find it by type assertion on the store.

// KV is a fenced key-value store: a value per key together with the highest
// token that key has seen, so that a write carrying a lease's token is
// refused once a later holder's token has been seen. storage/sqlite,
// storage/etcd and httpapi.Client implement it; httpapi's server serves one
// at /v1/kv/.
type KV interface {
	// PutFenced stores value under key if tok is at least the highest token
	// the key has seen, and makes tok the highest. Errors: one matching
	// ErrInvalid (or token.ErrInvalid) for a bad key or token, a
	// *token.StaleError (token.ErrStale) for a lower token, ErrQuota,
	// ErrUnavailable, or ctx's error (with ErrUnknown when the write may
	// have been done).
	PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error

	// GetFenced returns the value under key and the highest token it has
	// seen. Errors: ErrInvalid, ErrNoKey (which matches ErrNotFound; also
	// for a deleted key), ErrUnavailable, or ctx's error.
	GetFenced(ctx context.Context, key string) ([]byte, token.Token, error)

	// DeleteFenced removes the value under key if tok is at least the
	// highest token the key has seen, and keeps tok as the highest, so that
	// a later write with a lower token stays stale. Errors: as PutFenced's.
	DeleteFenced(ctx context.Context, key string, tok token.Token) error
}

// HealthChecker is a store that can say whether it answers and can grant
// (storage/sqlite, storage/etcd, httpapi.Client). httpapi's server asks it
// for GET /healthz.
type HealthChecker interface {
	// Health returns nil when the store answers and can grant.
	Health(ctx context.Context) error
}

// Stats is what a store says about its leases, for monitoring.
type Stats struct {
	Live int64 // unexpired leases

	// Oldest is how long ago the oldest live lease was granted, on the
	// store's clock (0 when there is none); negative when the store cannot
	// tell (storage/etcd).
	Oldest time.Duration

	// WAL is the size in bytes of the store's write-ahead log (SQLite's
	// -wal file); negative for a store without one it can measure.
	WAL int64
}

// StatsReporter is a store that can report its Stats (storage/sqlite,
// storage/etcd). httpapi's Metrics export them at each scrape
// (Metrics.WatchStore) and its status page shows them.
type StatsReporter interface {
	// Stats reads the store's figures. It may read every lease: call it at
	// scrape intervals, not per request. Errors: ErrUnavailable, or ctx's
	// error.
	Stats(ctx context.Context) (Stats, error)
}

// WaitCounter is a store that can say how many acquires wait for each name,
// in every process that shares the store (storage/sqlite: its waiters
// table; storage/etcd: its queue keys). httpapi's status page shows them.
type WaitCounter interface {
	// Waiting returns the number of acquires waiting for each name that has
	// any. It reads the whole queue: call it for a page or a scrape, not
	// per request.
	Waiting(ctx context.Context) (map[string]int, error)
}
