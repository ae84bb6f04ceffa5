package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
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

// runServe is "picket serve": it parses the flags, listens on -addr and
// serves until SIGINT or SIGTERM, the one place where serve's signals are
// caught (serveSignals).
func runServe(ctx context.Context, e *env, args []string) error {
	cfg, err := parseServe(e, args)
	if err != nil {
		return err
	}
	// Caught from here until serve has returned, after the store's close.
	ctx, sigs := serveSignals(ctx, cfg.logger)
	defer sigs.stop()
	cfg.hurry, cfg.reload = sigs.hurry, sigs.reload
	// Listen before anything runs, so a bad or busy address fails at once.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, ln)
}

// serve opens the store cfg names and serves the HTTP API on ln until ctx
// is cancelled, which is a clean stop (nil: exit status 0): in-flight
// requests get cfg.shutdown to finish, then the store is closed. It closes
// ln. An error is a failure to start or to serve.
func serve(ctx context.Context, cfg *serveConfig, ln net.Listener) error {
	defer ln.Close() // the HTTP server closes it too; this is for the early returns
	logger := cfg.logger
	metrics := httpapi.NewMetrics()
	store, sweeper, err := openServed(&cfg.store, cfg.lockDelay, cfg.quota, cfg.hist, logger, metrics, overlayOption(cfg.store.allowOverlay)...)
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
	var debugLn net.Listener
	if cfg.debugAddr != "" {
		if debugLn, err = listenDebug(cfg.debugAddr); err != nil {
			return err
		}
		defer debugLn.Close()
	}
	srv, err := newHTTPServer(cfg, store, metrics)
	if err != nil {
		return err
	}
	if cfg.addrFile != "" {
		if err := writeAddrFile(cfg.addrFile, ln.Addr()); err != nil {
			return err
		}
		defer os.Remove(cfg.addrFile)
	}
	logServing(cfg, ln.Addr())
	notify(logger, daemon.SdNotifyReady)

	done := make(chan struct{})
	defer close(done)
	go func() { // a second signal: stop waiting for in-flight requests
		select {
		case <-cfg.hurry:
			level.Warn(logger).Log("msg", "another signal while stopping: closing connections now; the store still closes cleanly")
			srv.Close()
		case <-done:
		}
	}()

	var g run.Group
	addHTTPServer(&g, cfg, srv, ln)
	if debugLn != nil {
		level.Info(logger).Log("msg", "serving profiles", "addr", "http://"+debugLn.Addr().String()+"/debug/pprof/")
		dsrv := debugServer()
		g.Add(func() error { return serveDebug(dsrv, debugLn) }, func(error) { dsrv.Close() })
	}
	addUntilDone(&g, ctx)
	addReloader(&g, cfg)
	addSweeper(&g, cfg, sweeper)
	if err := g.Run(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	level.Info(logger).Log("msg", "stopped", "reason", context.Cause(ctx))
	return nil
}

// newHTTPServer makes the HTTP server of the API over store.
func newHTTPServer(cfg *serveConfig, store servedStore, metrics *httpapi.Metrics) (*http.Server, error) {
	serverOpts := append(slices.Clip(cfg.serverOpts), httpapi.WithLogger(cfg.logger), httpapi.WithMetrics(metrics), httpapi.WithKV(store),
		httpapi.WithMaxInFlight(cfg.maxInFlight), httpapi.WithMaxWaiting(cfg.maxWaiting), httpapi.WithMaxLists(cfg.maxLists),
		httpapi.WithBodyTimeout(cfg.bodyTimeout), httpapi.WithBodyBudget(cfg.bodyBudget), httpapi.WithAllowedOrigins(cfg.allowOrigins...), httpapi.WithAllowedHosts(cfg.allowHosts...),
		httpapi.WithStatusPage(cfg.statusPage))
	if sr, ok := store.(lease.StatsReporter); ok { // sqlite: leases, the oldest, the -wal; etcd: one count of its lease keys
		metrics.WatchStore(sr)
	}
	handler, err := httpapi.NewServer(store, serverOpts...)
	if err != nil { // the flags were checked by parseServe: not expected
		return nil, err
	}
	srv := handler.HTTPServer()
	if cfg.tlsConfig != nil {
		srv.TLSConfig = cfg.tlsConfig
		// HTTP/1.1 only: the server's defenses (admission, body and header
		// deadlines, long polls) are built and tested for it.
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	return srv, nil
}

// logServing logs where the server listens and what it fronts.
func logServing(cfg *serveConfig, addr net.Addr) {
	where := []any{"db", cfg.store.db}
	if cfg.storeKind == storeEtcd {
		where = []any{"etcd", cfg.store.etcd.endpoints, "prefix", cfg.store.etcd.prefix}
	}
	level.Info(cfg.logger).Log(append(append([]any{"msg", "serving", "addr", addr.String()}, where...), "auth", cfg.auth, "tls", cfg.tls.mode())...)
	if cfg.statusPage {
		scheme := "http"
		if cfg.tlsConfig != nil {
			scheme = "https"
		}
		level.Info(cfg.logger).Log("msg", "status page", "url", scheme+"://"+addr.String()+"/ui")
	}
}

// writeAddrFile writes addr to path, whole or not at all (a temporary file
// renamed into place), for a supervisor or a test that started serve with
// -addr :0.
func writeAddrFile(path string, addr net.Addr) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("-addr-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("-addr-file: %w", err)
	}
	return nil
}

// addHTTPServer adds the HTTP server to g. Interrupt: stop accepting,
// finish in-flight requests (long polls included) within the shutdown
// timeout.
func addHTTPServer(g *run.Group, cfg *serveConfig, srv *http.Server, ln net.Listener) {
	g.Add(func() error {
		serve := srv.Serve
		if cfg.tlsConfig != nil {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func(error) {
		notify(cfg.logger, daemon.SdNotifyStopping)
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdown)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			level.Warn(cfg.logger).Log("msg", "shutdown timed out; closing connections", "err", err)
			srv.Close()
		}
	})
}

// addUntilDone adds an actor that ends g, with no error, when ctx is
// cancelled.
func addUntilDone(g *run.Group, ctx context.Context) {
	stop := make(chan struct{})
	g.Add(func() error {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		return nil
	}, func(error) { close(stop) })
}

// addReloader adds the actor that reloads the TLS certificate and key on
// SIGHUP (they are also reloaded when the files change); without TLS there
// is nothing to reload.
func addReloader(g *run.Group, cfg *serveConfig) {
	stop := make(chan struct{})
	g.Add(func() error {
		for {
			select {
			case <-stop:
				return nil
			case <-cfg.reload:
				if cfg.certs == nil {
					level.Info(cfg.logger).Log("msg", "SIGHUP: nothing to reload (no -tls-cert)")
					continue
				}
				cfg.certs.reload("SIGHUP")
			}
		}
	}, func(error) { close(stop) })
}

// addSweeper adds the housekeeping: delete expired lease rows now and then
// (SQLite; etcd deletes an expired lease's key by itself, and sw is nil).
func addSweeper(g *run.Group, cfg *serveConfig, sw sweeper) {
	ctx, stop := context.WithCancel(context.Background())
	g.Add(func() error {
		if sw == nil {
			<-ctx.Done()
			return nil
		}
		t := time.NewTicker(cfg.sweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if n, err := sw.Sweep(ctx); err != nil {
					level.Warn(cfg.logger).Log("msg", "sweep", "err", err)
				} else if n > 0 {
					level.Debug(cfg.logger).Log("msg", "sweep", "deleted", n)
				}
			}
		}
	}, func(error) { stop() })
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
// given, else the SQLite file (which also sweeps and keeps the quota). f
// was resolved (storeFlags.local): it names one of them.
func openServed(f *storeFlags, lockDelay time.Duration, quota quota, hist retention,
	logger log.Logger, metrics *httpapi.Metrics, extra ...sqlite.Option) (servedStore, sweeper, error) {
	if f.etcd.set() {
		st, err := f.etcd.open(etcd.WithLockDelay(lockDelay), etcd.WithLogger(log.With(logger, "component", "etcd")),
			etcd.WithMaxLeases(quota.maxLeases), etcd.WithMaxKVKeys(quota.maxKVKeys), etcd.WithMaxKVBytes(quota.maxKVBytes),
			etcd.WithHistory(hist.max, hist.age))
		if err != nil {
			return nil, nil, err
		}
		return st, nil, nil
	}
	st, err := sqlite.Open(f.db, append([]sqlite.Option{
		sqlite.WithLockDelay(lockDelay),
		sqlite.WithLogger(log.With(logger, "component", "sqlite")),
		sqlite.WithBatchHook(metrics.ObserveBatch),
		sqlite.WithMaxLeases(quota.maxLeases), sqlite.WithMaxKVKeys(quota.maxKVKeys), sqlite.WithMaxKVBytes(quota.maxKVBytes),
		sqlite.WithMaxWatched(quota.maxWatched),
		sqlite.WithHistory(hist.max, hist.age),
	}, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	return st, st, nil
}

// quota is -max-leases, -max-kv-keys, -max-kv-bytes and -max-watched.
type quota struct {
	maxLeases, maxKVKeys, maxWatched int
	maxKVBytes                       int64
}
