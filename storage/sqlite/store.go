package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Store is a lease.Store in one SQLite file. It is safe for concurrent use.
// Open one Store per file per process: the writer goroutine of each open
// Store holds the file's write lock only while it commits a batch, so
// several Stores (and processes) on one file work, but each adds a writer.
type Store struct {
	path      string
	clock     lease.Clock
	lockDelay time.Duration
	logger    log.Logger
	busy      time.Duration
	maxBatch  int
	batchHook func(int, time.Duration)
	quota     quota        // quota.go
	kvCache   kvCache      // the writer goroutine's only
	history   historyState // WithHistory (history.go)

	wdb   *sql.DB // one connection, the writer's
	rdb   *sql.DB // query-only pool
	w     *writer
	epoch atomic.Pointer[string] // the epoch the file is known to be in

	ops     chan *op      // to the writer goroutine
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when the writer goroutine has returned
	closed  sync.Once

	failure atomic.Pointer[FailedError]  // set once, when the store fails closed
	lastErr atomic.Pointer[writeFailure] // the last batch's failure; nil after a write commits (health.go)
	waiters hub                          // the acquires waiting in this Store (hub.go)
	bell    bell                         // its id in the file, liveness byte and bell (bell.go)
	watch   watchHub                     // the watches of this Store (watch.go)

	real      string      // the path SQLite opens: symbolic links resolved
	walBefore string      // the mark of the -wal found at open (files.go)
	m         *member     // the Store's place among the file's openers (inode.go)
	floor     token.Token // WithTokenFloor (backup.go)
	kvFloor   token.Token // the fenced keys' floor a restore set (floor.go)

	overlayRisk bool     // WithOverlayRisk (fsys.go)
	existing    bool     // WithExisting (options.go)
	place       fileHere // the file the path named at Open (moved.go)
	space       space    // a full disk and the reserve (reserve.go)
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.KV            = (*Store)(nil)
	_ lease.HealthChecker = (*Store)(nil)
	_ lease.WaitCounter   = (*Store)(nil)
)

// Open opens the store in the file at path, creating the file (mode 0600:
// it holds the holders' secrets) and its schema if needed, and starts its
// writer goroutine. The file is put in WAL
// mode (Open fails if SQLite does not agree), brought to the current schema
// version and, if the host rebooted since the file was last written, every
// lease in it is held again for its full TTL from now.
//
// Errors: lease.ErrInvalid for an empty or in-memory path or a bad option,
// ErrNewerSchema for a file from a newer picket, or the error that prevented
// opening the file.
func Open(path string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	abs, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	if cfg.clock == nil {
		cfg.clock = SystemClock()
	}
	if err := checkClock(cfg.clock); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s := &Store{
		path:      abs,
		clock:     cfg.clock,
		lockDelay: cfg.lockDelay,
		logger:    cfg.logger,
		busy:      cfg.busyTimeout,
		maxBatch:  cfg.maxBatch,
		batchHook: cfg.batchHook,
		quota:     cfg.quota,
		floor:     cfg.tokenFloor,
		history:   historyState{max: cfg.historyMax, age: cfg.historyAge},

		overlayRisk: cfg.overlayRisk,
		existing:    cfg.existing,
		ops:         make(chan *op, cfg.maxBatch),
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
		bell:        bell{id: newProcessID()},
	}
	if err := s.open(context.Background(), cfg.readConns); err != nil {
		s.closeDBs()
		s.m.exit(true)
		return nil, openFailed(abs, cfg.existing, err)
	}
	s.m.exit(false)
	go s.writeLoop()
	return s, nil
}

func (s *Store) open(ctx context.Context, readConns int) error {
	if err := s.checkFileSystem(); err != nil { // fsys.go
		return err
	}
	if err := createPrivate(s.path, s.existing); err != nil {
		return err
	}
	s.checkSpace()                    // reserve.go: before SQLite needs room for its -shm
	if err := s.enter(); err != nil { // files.go
		return err
	}
	if err := s.notePlace(); err != nil { // moved.go
		return err
	}
	hook("joining") // holding the gate
	var err error
	if s.wdb, err = sql.Open("sqlite", writerDSN(s.real, min(s.busy, sqliteBusyWait), s.existing)); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	conn, err := s.openWriterConn(ctx)
	if err != nil {
		return err
	}
	s.w = &writer{conn: conn}
	if err := checkPragmas(ctx, conn); err != nil {
		return err
	}
	first, err := s.admit(ctx) // files.go
	if err != nil {
		return err
	}
	if err := s.checkOpenersEpoch(ctx, first); err != nil { // epochs.go
		return err
	}
	if err := s.prepareFile(ctx); err != nil {
		return err
	}
	if err := s.settleFile(ctx, first); err != nil {
		return err
	}
	if err := s.w.prepare(ctx); err != nil {
		return err
	}
	if s.rdb, err = sql.Open("sqlite", readerDSN(s.real, s.busy)); err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(readConns)
	s.rdb.SetMaxIdleConns(readConns)
	if err := s.rdb.PingContext(ctx); err != nil {
		return err
	}
	s.keepReserve() // reserve.go
	return nil
}

// openWriterConn opens the writer connection. Its DSN switches the file to
// WAL mode, which takes a lock: a busy file is retried, never reported.
func (s *Store) openWriterConn(ctx context.Context) (*sql.Conn, error) {
	var conn *sql.Conn
	err := s.retryBusy(ctx, func() error {
		var err error
		conn, err = s.wdb.Conn(ctx)
		return err
	})
	return conn, err
}

// checkPragmas verifies that SQLite agreed to what the DSN asked: WAL mode
// is a file property SQLite may refuse (for instance on a file system
// without shared memory) without failing the PRAGMA.
func checkPragmas(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal: is the file on a local file system?", mode)
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if sync != 2 {
		return fmt.Errorf("synchronous is %d, not 2 (FULL)", sync)
	}
	return nil
}

// Path returns the absolute path of the store's file.
func (s *Store) Path() string { return s.path }

// Close stops the writer goroutine after the batch it is committing, fails
// the operations still waiting with ErrClosed, waits for the goroutine to
// return and closes the file; the last Store open on the file checkpoints
// and truncates the WAL first, so that a stopped store is one file. Later
// calls return nil.
func (s *Store) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.closing)
		// Wait until every Watch has returned (closing ends them) and
		// dropped its lock bytes: they hold live shared while joined.
		s.watch.live.Lock()
		//lint:ignore SA2001 the lock is taken only to wait for the watches' shared holds
		s.watch.live.Unlock()
		<-s.done
		err = s.leave() // files.go: checkpoints, then closeDBs
	})
	return err
}

func (s *Store) closeDBs() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if s.rdb != nil {
		keep(s.rdb.Close())
	}
	if s.w != nil {
		keep(s.w.close())
	}
	if s.wdb != nil {
		keep(s.wdb.Close())
	}
	if first != nil {
		return fmt.Errorf("sqlite: close %s: %w", s.path, first)
	}
	return nil
}

// fail makes the store fail closed: from now on every write is refused.
func (s *Store) fail(cause error) *FailedError {
	f := &FailedError{Cause: cause}
	if s.failure.CompareAndSwap(nil, f) {
		s.logger.Log("msg", "store failed closed: refusing every write until reopened", "err", cause, "path", s.path)
		return f
	}
	return s.failure.Load()
}
