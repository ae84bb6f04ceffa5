package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"time"

	"github.com/go-kit/log"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// serveConfig is what picket serve runs with: its flags, parsed and
// checked, and what they name read (tokens, TLS certificates, the logger).
type serveConfig struct {
	fs        *flag.FlagSet // parsed; says where each flag came from
	store     storeFlags    // -db or -etcd (the shared store flags)
	storeKind storeKind     // storeEmbedded or storeEtcd
	addr      string        // -addr: runServe listens there
	addrFile  string        // -addr-file: where serve writes the address it listens on

	serverOpts []httpapi.Option // the tokens; serve adds the rest
	auth       bool             // a bearer token is required

	lockDelay, shutdown, sweep, bodyTimeout time.Duration
	maxInFlight, maxWaiting, maxLists       int
	bodyBudget                              int64
	allowOrigins, allowHosts                listFlag
	quota                                   quota
	hist                                    retention
	statusPage                              bool
	debugAddr                               string

	tls       serveTLSFlags
	tlsConfig *tls.Config   // nil: plain HTTP
	certs     *certReloader // nil without -tls-cert
	logger    log.Logger

	// hurry is closed when the graceful stop must be cut short (a second
	// SIGINT or SIGTERM): connections are closed at once, the store still
	// closes cleanly. reload receives a SIGHUP: reload the TLS certificate.
	// nil: never.
	hurry  <-chan struct{}
	reload <-chan struct{}
}

// serveInstead is what a client's store flag given to serve is told.
const serveInstead = "serve fronts a store of its own (-db or -etcd); the token it requires is -auth-token-file, its admin token -admin-token-file, " +
	"its TLS -tls-cert, -tls-key and -tls-client-ca"

// parseServe parses and checks serve's flags.
func parseServe(e *env, args []string) (*serveConfig, error) {
	fs := newFlagSet(e, "serve")
	c := &serveConfig{fs: fs}
	fs.StringVar(&c.addr, "addr", DefaultAddr, "listen on this `address`")
	fs.StringVar(&c.addrFile, "addr-file", "", "once serving, write the address listened on (host:port, the port chosen with -addr :0) to this `file`")
	c.store.register(fs)
	setFlagHelp(fs, "db", DefaultDB, "the SQLite `file` (created if missing)")
	setFlagHelp(fs, "allow-overlayfs", "false", overlayFlagUsage)
	setFlagHelp(fs, "auth-token-file", "", "require this bearer token (read from `file`) on every /v1/ request: the clients' token, the one they send with -auth-token-file")
	requireFile := fs.String("require-token-file", "", "the old name of -auth-token-file (the same `file`)")
	setFlagHelp(fs, "admin-token-file", "", "accept revokes (POST /v1/revoke) with this admin token (read from `file`), which must differ from -auth-token-file's and is enough alone for every other /v1/ request; without it, revoke is refused")
	historyMax := fs.Int("history-max", lease.DefaultHistoryMaxEvents, "keep at most this many events of grant history (0: no history)")
	historyAge := fs.Duration("history-age", lease.DefaultHistoryMaxAge, "keep no event of grant history older than this (0: any age)")
	fs.DurationVar(&c.lockDelay, "lock-delay", 0, "keep a name unavailable this long after its lease expired (not after a release)")
	fs.DurationVar(&c.shutdown, "shutdown-timeout", DefaultShutdown, "how long SIGINT/SIGTERM waits for in-flight requests")
	fs.DurationVar(&c.sweep, "sweep", DefaultSweepInterval, "how often to delete expired lease rows")
	fs.IntVar(&c.maxInFlight, "max-in-flight", httpapi.DefaultMaxInFlight, "answer 429 beyond this many /v1/ requests at once, long polls aside (0: no bound)")
	fs.IntVar(&c.maxWaiting, "max-waiting", httpapi.DefaultMaxWaiting, "answer 429 beyond this many acquires waiting with wait_ms (0: no bound)")
	fs.IntVar(&c.maxLists, "max-lists", httpapi.DefaultMaxLists, "answer this many lists and history pages at once; more wait their turn (0: no bound)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", httpapi.DefaultBodyTimeout, "cut off a request whose body has not arrived this long after its headers")
	fs.Int64Var(&c.bodyBudget, "body-budget", httpapi.DefaultBodyBudget, "answer 429 to a request body that would take the bodies held at once beyond this many `bytes` (0: no bound)")
	fs.Var(&c.allowOrigins, "allow-origin", "answer requests from web pages of this `origin` (scheme://host[:port]; repeat or comma-separate; * for any)")
	fs.Var(&c.allowHosts, "allow-host", "on a loopback address, answer requests naming this `host` besides localhost, 127.0.0.1 and [::1] (repeat or comma-separate; * for any)")
	fs.IntVar(&c.quota.maxLeases, "max-leases", 0, "refuse (507) a new lease beyond this many live ones (0: no bound)")
	fs.IntVar(&c.quota.maxKVKeys, "max-kv-keys", 0, "refuse (507) a new fenced key beyond this many (0: no bound)")
	fs.Int64Var(&c.quota.maxKVBytes, "max-kv-bytes", 0, "refuse (507) a fenced write that takes keys and values beyond this many `bytes` (0: no bound)")
	fs.IntVar(&c.quota.maxWatched, "max-watched", 0, "-db: refuse (507) a watch of a new name beyond this many names ever watched, each a row kept for watches (0: no bound)")
	logLevel := fs.String("log-level", "info", "log at this `level` and above: debug (every refused request), info, warn, error")
	logFormat := fs.String("log-format", "logfmt", "log `format`: logfmt or json")
	fs.BoolVar(&c.statusPage, "ui", true, "serve the status page at /ui (sign in with the -auth-token-file token, or -admin-token-file's to revoke)")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "serve Go's profiles (/debug/pprof/) on this loopback `address` (off by default)")
	c.tls.register(fs) // -tls-cert, -tls-key, -tls-client-ca (tls.go)
	if err := parse(fs, args, false); err != nil {
		return nil, err
	}
	if err := c.takeOldTokenFlag(requireFile); err != nil {
		return nil, err
	}
	adminFile := c.store.adminFile
	c.store.adminFile = "" // the server's own admin token, not a client's: store.local must not refuse it
	var err error
	if c.storeKind, err = c.store.local(fs, "serve", serveInstead); err != nil {
		return nil, err
	}
	c.hist = retention{*historyMax, *historyAge}
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.logger, err = newLogger(e.stderr, *logFormat, *logLevel); err != nil {
		return nil, err
	}
	if c.tlsConfig, c.certs, err = c.tls.config(c.logger); err != nil {
		return nil, err
	}
	return c, c.readTokens(*requireFile, adminFile)
}

// takeOldTokenFlag joins serve's two names of the token it requires:
// -auth-token-file, the clients' name for the same credential and serve's
// since issue 37 (one name per credential on both sides), and
// -require-token-file, serve's name from issue 26 to 37, which still
// works: a server started with either (or PICKET_AUTH_TOKEN_FILE) must not
// come up without authentication. Both names with different files in one
// place are a usage error; -require-token-file on the command line wins
// over PICKET_AUTH_TOKEN_FILE.
func (c *serveConfig) takeOldTokenFlag(requireFile *string) error {
	old := c.store.authFile
	if old == "" {
		return nil
	}
	c.store.authFile = "" // not a client's token here: store.local must not refuse it
	if flagSource(c.fs, "require-token-file") == onCommandLine && flagSource(c.fs, "auth-token-file") != onCommandLine {
		return nil // the command line wins over PICKET_AUTH_TOKEN_FILE
	}
	if *requireFile != "" && *requireFile != old {
		return usagef("serve: %s and %s name different files: -require-token-file is the old name of -auth-token-file; give one",
			describeFlag("require-token-file", flagSource(c.fs, "require-token-file")), describeFlag("auth-token-file", flagSource(c.fs, "auth-token-file")))
	}
	*requireFile = old
	return nil
}

// check refuses values out of their bounds.
func (c *serveConfig) check() error {
	if c.hist.max < 0 || c.hist.age < 0 {
		return usagef("serve: -history-max and -history-age must not be negative")
	}
	if c.maxLists < 0 || c.quota.maxLeases < 0 || c.quota.maxKVKeys < 0 || c.quota.maxKVBytes < 0 || c.quota.maxWatched < 0 || c.bodyBudget < 0 {
		return usagef("serve: -max-lists, -max-leases, -max-kv-keys, -max-kv-bytes, -max-watched and -body-budget must not be negative")
	}
	if c.debugAddr != "" {
		if err := checkDebugAddr(c.debugAddr); err != nil {
			return err
		}
	}
	if c.bodyTimeout <= 0 {
		return usagef("serve: -body-timeout must be positive")
	}
	if c.shutdown <= 0 || c.sweep <= 0 {
		return usagef("serve: -shutdown-timeout and -sweep must be positive")
	}
	if c.maxInFlight < 0 || c.maxWaiting < 0 {
		return usagef("serve: -max-in-flight and -max-waiting must not be negative")
	}
	return nil
}

// readTokens reads the bearer token the server requires and the admin
// token, which must differ.
func (c *serveConfig) readTokens(requireFile, adminFile string) error {
	if requireFile != "" {
		tok, err := readAuthToken(requireFile)
		if err != nil {
			return err
		}
		c.serverOpts = append(c.serverOpts, httpapi.WithAuthToken(tok))
		c.auth = true
	}
	if adminFile != "" {
		tok, err := readAuthToken(adminFile)
		if err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		if requireFile != "" {
			if client, _ := readAuthToken(requireFile); client == tok {
				return usagef("serve: -admin-token-file holds the same token as -require-token-file: every client could revoke; use another")
			}
		}
		c.serverOpts = append(c.serverOpts, httpapi.WithAdminToken(tok))
	}
	return nil
}

// retention is -history-max and -history-age.
type retention struct {
	max int
	age time.Duration
}
