package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/oklog/run"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/sqlite"
)

// Defaults of picket serve.
const (
	DefaultAddr          = "127.0.0.1:7070"
	DefaultShutdown      = 30 * time.Second
	DefaultSweepInterval = time.Minute
)

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve")
	addr := fs.String("addr", DefaultAddr, "listen on this `address`")
	db := fs.String("db", DefaultDB, "the SQLite `file` (created if missing)")
	allowOverlay := fs.Bool("allow-overlayfs", false, overlayFlagUsage)
	var etcdF etcdFlags
	etcdF.register(fs)
	authFile := fs.String("auth-token-file", "", "require this bearer token (read from `file`) on every /v1/ request")
	adminFile := fs.String("admin-token-file", "", "accept revokes (POST /v1/revoke) with this admin token (read from `file`), which must differ from -auth-token-file's; without it, revoke is refused")
	historyMax := fs.Int("history-max", lease.DefaultHistoryMaxEvents, "keep at most this many events of grant history (0: no history)")
	historyAge := fs.Duration("history-age", lease.DefaultHistoryMaxAge, "keep no event of grant history older than this (0: any age)")
	lockDelay := fs.Duration("lock-delay", 0, "keep a name unavailable this long after its lease expired (not after a release)")
	shutdown := fs.Duration("shutdown-timeout", DefaultShutdown, "how long SIGINT/SIGTERM waits for in-flight requests")
	sweep := fs.Duration("sweep", DefaultSweepInterval, "how often to delete expired lease rows")
	maxInFlight := fs.Int("max-in-flight", httpapi.DefaultMaxInFlight, "answer 429 beyond this many /v1/ requests at once, long polls aside (0: no bound)")
	maxWaiting := fs.Int("max-waiting", httpapi.DefaultMaxWaiting, "answer 429 beyond this many acquires waiting with wait_ms (0: no bound)")
	maxLists := fs.Int("max-lists", httpapi.DefaultMaxLists, "answer this many lists at once; more wait their turn (0: no bound)")
	bodyTimeout := fs.Duration("body-timeout", httpapi.DefaultBodyTimeout, "cut off a request whose body has not arrived this long after its headers")
	bodyBudget := fs.Int64("body-budget", httpapi.DefaultBodyBudget, "answer 429 to a request body that would take the bodies held at once beyond this many `bytes` (0: no bound)")
	var allowOrigins, allowHosts listFlag
	fs.Var(&allowOrigins, "allow-origin", "answer requests from web pages of this `origin` (scheme://host[:port]; repeat or comma-separate; * for any)")
	fs.Var(&allowHosts, "allow-host", "on a loopback address, answer requests naming this `host` besides localhost, 127.0.0.1 and [::1] (repeat or comma-separate; * for any)")
	maxLeases := fs.Int("max-leases", 0, "refuse (507) a new lease beyond this many live ones (0: no bound)")
	maxKVKeys := fs.Int("max-kv-keys", 0, "refuse (507) a new fenced key beyond this many (0: no bound)")
	maxKVBytes := fs.Int64("max-kv-bytes", 0, "refuse (507) a fenced write that takes keys and values beyond this many `bytes` (0: no bound)")
	logLevel := fs.String("log-level", "info", "log at this `level` and above: debug (every refused request), info, warn, error")
	logFormat := fs.String("log-format", "logfmt", "log `format`: logfmt or json")
	statusPage := fs.Bool("ui", true, "serve the status page at /ui (sign in with the -auth-token-file token, or -admin-token-file's to revoke)")
	debugAddr := fs.String("debug-addr", "", "serve Go's profiles (/debug/pprof/) on this loopback `address` (off by default)")
	var tlsF serveTLSFlags // -tls-cert, -tls-key, -tls-client-ca (tls.go)
	tlsF.register(fs)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *historyMax < 0 || *historyAge < 0 {
		return usagef("serve: -history-max and -history-age must not be negative")
	}
	if *maxLists < 0 || *maxLeases < 0 || *maxKVKeys < 0 || *maxKVBytes < 0 || *bodyBudget < 0 {
		return usagef("serve: -max-lists, -max-leases, -max-kv-keys, -max-kv-bytes and -body-budget must not be negative")
	}
	if *debugAddr != "" {
		if err := checkDebugAddr(*debugAddr); err != nil {
			return err
		}
	}
	if *bodyTimeout <= 0 {
		return usagef("serve: -body-timeout must be positive")
	}
	logger, err := newLogger(e.stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	tlsConfig, certs, err := tlsF.config(logger)
	if err != nil {
		return err
	}
	if *shutdown <= 0 || *sweep <= 0 {
		return usagef("serve: -shutdown-timeout and -sweep must be positive")
	}
	if *maxInFlight < 0 || *maxWaiting < 0 {
		return usagef("serve: -max-in-flight and -max-waiting must not be negative")
	}
	var serverOpts []httpapi.Option
	if *authFile != "" {
		tok, err := readAuthToken(*authFile)
		if err != nil {
			return err
		}
		serverOpts = append(serverOpts, httpapi.WithAuthToken(tok))
	}
	if *adminFile != "" {
		tok, err := readAuthToken(*adminFile)
		if err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		if *authFile != "" {
			if client, _ := readAuthToken(*authFile); client == tok {
				return usagef("serve: -admin-token-file holds the same token as -auth-token-file: every client could revoke; use another")
			}
		}
		serverOpts = append(serverOpts, httpapi.WithAdminToken(tok))
	}

	// Later signals must not kill the process half-way through its clean
	// stop (the store's close checkpoints and leaves one file): a terminal's
	// Ctrl-C reaches both "go run" and picket, and go run relays it, so
	// picket gets two. Caught from here until the store is closed, a signal
	// after the first cuts the graceful wait short instead: connections are
	// closed at once, and the store still closes cleanly.
	hurry := make(chan os.Signal, 4)
	signal.Notify(hurry, os.Interrupt, syscall.SIGTERM)
	defer func() { // deferred before the store's close: runs after it
		signal.Stop(hurry) // no delivery after it returns
		close(hurry)
	}()
	var served atomic.Pointer[http.Server] // set once the server exists
	go func() {
		seen := 0
		for range hurry {
			if seen++; seen == 2 {
				level.Warn(logger).Log("msg", "another signal while stopping: closing connections now; the store still closes cleanly")
				if srv := served.Load(); srv != nil {
					srv.Close()
				}
			}
		}
	}()

	metrics := httpapi.NewMetrics()
	quota := quota{maxLeases: *maxLeases, maxKVKeys: *maxKVKeys, maxKVBytes: *maxKVBytes}
	hist := retention{*historyMax, *historyAge}
	store, sweeper, err := openServed(fs, *db, &etcdF, *lockDelay, quota, hist, logger, metrics, overlayOption(*allowOverlay)...)
	if err != nil {
		return err
	}
	// The store closes after every actor has returned: no request is left
	// that could use it.
	defer func() {
		if err := store.Close(); err != nil {
			level.Error(logger).Log("msg", "closing the store", "err", err)
		}
	}()

	// Listen before anything runs, so a bad or busy address fails at once.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var debugLn net.Listener
	if *debugAddr != "" {
		if debugLn, err = listenDebug(*debugAddr); err != nil {
			ln.Close()
			return err
		}
	}
	serverOpts = append(serverOpts, httpapi.WithLogger(logger), httpapi.WithMetrics(metrics), httpapi.WithKV(store),
		httpapi.WithMaxInFlight(*maxInFlight), httpapi.WithMaxWaiting(*maxWaiting), httpapi.WithMaxLists(*maxLists),
		httpapi.WithBodyTimeout(*bodyTimeout), httpapi.WithBodyBudget(*bodyBudget), httpapi.WithAllowedOrigins(allowOrigins...), httpapi.WithAllowedHosts(allowHosts...),
		httpapi.WithStatusPage(*statusPage))
	if sr, ok := store.(lease.StatsReporter); ok { // sqlite: leases, the oldest, the -wal; etcd: one count of its lease keys
		metrics.WatchStore(sr)
	}
	handler, err := httpapi.NewServer(store, serverOpts...)
	if err != nil { // the flags were checked above: not expected
		ln.Close()
		if debugLn != nil {
			debugLn.Close()
		}
		return err
	}
	srv := handler.HTTPServer()
	where := []any{"db", *db}
	if etcdF.set() {
		where = []any{"etcd", etcdF.endpoints, "prefix", etcdF.prefix}
	}
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		// HTTP/1.1 only: the server's defenses (admission, body and header
		// deadlines, long polls) are built and tested for it.
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	level.Info(logger).Log(append(append([]any{"msg", "serving", "addr", ln.Addr().String()}, where...), "auth", *authFile != "", "tls", tlsF.mode())...)
	if *statusPage {
		scheme := "http"
		if tlsConfig != nil {
			scheme = "https"
		}
		level.Info(logger).Log("msg", "status page", "url", scheme+"://"+ln.Addr().String()+"/ui")
	}
	notify(logger, daemon.SdNotifyReady)

	served.Store(srv)

	var g run.Group
	// The HTTP server. Interrupt: stop accepting, finish in-flight requests
	// (long polls included) within the shutdown timeout.
	g.Add(func() error {
		serve := srv.Serve
		if tlsConfig != nil {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func(error) {
		notify(logger, daemon.SdNotifyStopping)
		sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			level.Warn(logger).Log("msg", "shutdown timed out; closing connections", "err", err)
			srv.Close()
		}
	})
	if debugLn != nil {
		level.Info(logger).Log("msg", "serving profiles", "addr", "http://"+debugLn.Addr().String()+"/debug/pprof/")
		dsrv := debugServer()
		g.Add(func() error { return serveDebug(dsrv, debugLn) }, func(error) { dsrv.Close() })
	}
	// The signal handler: SIGINT or SIGTERM end the group.
	g.Add(run.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM))
	// SIGHUP reloads the TLS certificate and key (they are also reloaded when
	// the files change); without TLS there is nothing to reload.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	hctx, hupDone := context.WithCancel(ctx)
	g.Add(func() error {
		for {
			select {
			case <-hctx.Done():
				return nil
			case <-hup:
				if certs == nil {
					level.Info(logger).Log("msg", "SIGHUP: nothing to reload (no -tls-cert)")
					continue
				}
				certs.reload("SIGHUP")
			}
		}
	}, func(error) { hupDone() })
	// Housekeeping: delete expired lease rows now and then (SQLite; etcd
	// deletes an expired lease's key by itself).
	sctx, stop := context.WithCancel(ctx)
	g.Add(func() error {
		if sweeper == nil {
			<-sctx.Done()
			return nil
		}
		t := time.NewTicker(*sweep)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return nil
			case <-t.C:
				if n, err := sweeper.Sweep(sctx); err != nil {
					level.Warn(logger).Log("msg", "sweep", "err", err)
				} else if n > 0 {
					level.Debug(logger).Log("msg", "sweep", "deleted", n)
				}
			}
		}
	}, func(error) { stop() })

	err = g.Run()
	if errors.Is(err, run.ErrSignal) {
		level.Info(logger).Log("msg", "stopped", "reason", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// newLogger returns the server's logger: logfmt or JSON on w, with a UTC
// timestamp, filtered to level and above. Refused requests are logged at
// debug, failures at error; no line ever holds a holder or a bearer token.
func newLogger(w io.Writer, format, lvl string) (log.Logger, error) {
	var logger log.Logger
	switch format {
	case "logfmt":
		logger = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		logger = log.NewJSONLogger(log.NewSyncWriter(w))
	default:
		return nil, usagef("serve: -log-format %q: want logfmt or json", format)
	}
	var allow level.Option
	switch lvl {
	case "debug":
		allow = level.AllowDebug()
	case "info":
		allow = level.AllowInfo()
	case "warn":
		allow = level.AllowWarn()
	case "error":
		allow = level.AllowError()
	default:
		return nil, usagef("serve: -log-level %q: want debug, info, warn or error", lvl)
	}
	return level.NewFilter(log.With(logger, "ts", log.DefaultTimestampUTC), allow), nil
}

// listFlag is a flag that may be repeated, each value a comma-separated
// list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

// servedStore is what serve needs of a store: leases, the fenced KV, Close.
type servedStore interface {
	lease.Store
	lease.KV
	io.Closer
}

// sweeper deletes expired lease rows: SQLite's own cleanup, which serve
// drives (an etcd store sweeps by itself), not a contract of package lease.
type sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// openServed opens the store serve fronts: the etcd cluster if -etcd was
// given, else the SQLite file (which also sweeps and keeps the quota).
func openServed(fs *flag.FlagSet, db string, etcdF *etcdFlags, lockDelay time.Duration, quota quota, hist retention,
	logger log.Logger, metrics *httpapi.Metrics, extra ...sqlite.Option) (servedStore, sweeper, error) {
	// A store named on the command line wins over one in the environment.
	dbFrom, etcdFrom := flagSource(fs, "db"), flagSource(fs, "etcd")
	if etcdF.set() && dbFrom == onCommandLine && etcdFrom != onCommandLine {
		etcdF.endpoints = ""
	}
	if etcdF.set() {
		if dbFrom != "" && (dbFrom == onCommandLine) == (etcdFrom == onCommandLine) {
			return nil, nil, usagef("serve: %s and %s exclude each other: name one store", describeFlag("etcd", etcdFrom), describeFlag("db", dbFrom))
		}
		st, err := etcdF.open(etcd.WithLockDelay(lockDelay), etcd.WithLogger(log.With(logger, "component", "etcd")),
			etcd.WithMaxLeases(quota.maxLeases), etcd.WithMaxKVKeys(quota.maxKVKeys), etcd.WithMaxKVBytes(quota.maxKVBytes),
			etcd.WithHistory(hist.max, hist.age))
		if err != nil {
			return nil, nil, err
		}
		return st, nil, nil
	}
	st, err := sqlite.Open(db, append([]sqlite.Option{
		sqlite.WithLockDelay(lockDelay),
		sqlite.WithLogger(log.With(logger, "component", "sqlite")),
		sqlite.WithBatchHook(metrics.ObserveBatch),
		sqlite.WithMaxLeases(quota.maxLeases), sqlite.WithMaxKVKeys(quota.maxKVKeys), sqlite.WithMaxKVBytes(quota.maxKVBytes),
		sqlite.WithHistory(hist.max, hist.age),
	}, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	return st, st, nil
}

// quota is -max-leases, -max-kv-keys and -max-kv-bytes.
type quota struct {
	maxLeases, maxKVKeys int
	maxKVBytes           int64
}

// retention is -history-max and -history-age.
type retention struct {
	max int
	age time.Duration
}
