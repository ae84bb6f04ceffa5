package sqlite

import (
	"time"

	"github.com/go-kit/log"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Defaults for the options of Open.
const (
	// DefaultBusyTimeout is how long a writer waits for another process's
	// write lock before the batch is retried and, in the end, fails.
	DefaultBusyTimeout = 10 * time.Second

	// DefaultMaxBatch is the most operations one transaction carries.
	DefaultMaxBatch = 256

	// DefaultReadConns is the size of the read-only connection pool.
	DefaultReadConns = 4

	// DefaultLockDelay is the time a name stays unavailable after its lease
	// expired (not after a release): off.
	DefaultLockDelay = 0
)

// Option configures Open.
type Option func(*config)

type config struct {
	clock       lease.Clock
	lockDelay   time.Duration
	logger      log.Logger
	busyTimeout time.Duration
	maxBatch    int
	readConns   int
	batchHook   func(size int, took time.Duration)
	quota       quota         // quota.go
	tokenFloor  token.Token   // backup.go
	overlayRisk bool          // fsys.go
	existing    bool          // WithExisting: never create the file
	historyMax  int           // history.go: events kept; 0 turns it off
	historyAge  time.Duration // history.go: the oldest kept; 0: any age
}

func defaultConfig() config {
	return config{
		lockDelay:   DefaultLockDelay,
		logger:      log.NewNopLogger(),
		busyTimeout: DefaultBusyTimeout,
		maxBatch:    DefaultMaxBatch,
		readConns:   DefaultReadConns,
		historyMax:  lease.DefaultHistoryMaxEvents,
		historyAge:  lease.DefaultHistoryMaxAge,
	}
}

// WithClock sets the clock that decides expiry (default, also for a nil
// clock: SystemClock()).
// Every process sharing a file must use clocks that agree.
func WithClock(c lease.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLockDelay sets the lock-delay of the leases this store grants for
// requests that name none (AcquireRequest.LockDelay zero): after such a
// lease expired its name stays unavailable for d, so that writes still in
// flight from the old holder land before anyone else holds the name
// (Chubby's lock-delay). The delay is kept with the lease in the file, so
// every opener honours it, whatever its own default. A clean release frees
// the name at once. Between 0 (the default) and lease.MaxLockDelay, whole
// milliseconds.
func WithLockDelay(d time.Duration) Option { return func(cfg *config) { cfg.lockDelay = d } }

// WithExisting makes Open use only a database that exists: a path with no
// file is an error matching fs.ErrNotExist, and nothing is created (no
// database, no -reserve, -wal or -shm), the SQLite open included (mode=rw),
// so a file removed meanwhile is not made again either. For a program that
// only reads a store (picket get, ls, watch, history, health, kv get): a
// mistyped path fails instead of leaving an empty store behind. An empty
// file that exists is an empty store, as without the option.
func WithExisting() Option { return func(cfg *config) { cfg.existing = true } }

// WithLogger sets the logger. The store logs failed batches and the moment
// it fails closed. Without it, or with a nil logger, nothing is logged.
func WithLogger(l log.Logger) Option { return func(cfg *config) { cfg.logger = l } }

// WithBusyTimeout sets how long a write waits for another process holding
// the file's write lock (SQLite's busy_timeout). Zero means the default,
// DefaultBusyTimeout; negative is lease.ErrInvalid from Open.
func WithBusyTimeout(d time.Duration) Option { return func(cfg *config) { cfg.busyTimeout = d } }

// WithMaxBatch sets the most operations one transaction carries; 1 turns
// group commit off. Zero means the default, DefaultMaxBatch; negative is
// lease.ErrInvalid from Open.
func WithMaxBatch(n int) Option { return func(cfg *config) { cfg.maxBatch = n } }

// WithReadConns sets the size of the read-only connection pool. Zero means
// the default, DefaultReadConns; negative is lease.ErrInvalid from Open.
func WithReadConns(n int) Option { return func(cfg *config) { cfg.readConns = n } }

// WithBatchHook calls hook after every committed batch with the number of
// operations it carried and the time it took (waits for another process's
// lock included), for metrics. The hook runs on the writer goroutine, after
// the batch's callers were answered and before the next batch: it must be
// quick.
func WithBatchHook(hook func(size int, took time.Duration)) Option {
	return func(cfg *config) { cfg.batchHook = hook }
}

// validate checks the options and puts the defaults in place of zero
// values and a nil logger.
func (c *config) validate() error {
	switch {
	case c.lockDelay < 0 || c.lockDelay > lease.MaxLockDelay:
		return invalidf("lock delay %v is out of bounds [0, %v]", c.lockDelay, lease.MaxLockDelay)
	case c.lockDelay%time.Millisecond != 0:
		return invalidf("lock delay %v is not a whole number of milliseconds", c.lockDelay)
	case c.busyTimeout < 0:
		return invalidf("busy timeout %v is negative", c.busyTimeout)
	case c.maxBatch < 0:
		return invalidf("max batch %d is negative", c.maxBatch)
	case c.readConns < 0:
		return invalidf("read connections %d is negative", c.readConns)
	case c.historyMax < 0 || c.historyAge < 0:
		return invalidf("history retention %d events, %v is negative", c.historyMax, c.historyAge)
	}
	if err := c.quota.validate(); err != nil {
		return err
	}
	if err := validateFloor(c.tokenFloor); err != nil {
		return err
	}
	if c.busyTimeout == 0 {
		c.busyTimeout = DefaultBusyTimeout
	}
	if c.maxBatch == 0 {
		c.maxBatch = DefaultMaxBatch
	}
	if c.readConns == 0 {
		c.readConns = DefaultReadConns
	}
	if c.logger == nil {
		c.logger = log.NewNopLogger()
	}
	return nil
}
