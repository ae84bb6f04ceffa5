package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// Defaults of the options.
const (
	DefaultPrefix         = "picket"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// Option configures Open.
type Option func(*config)

type config struct {
	prefix         string
	lockDelay      time.Duration
	logger         log.Logger
	dialTimeout    time.Duration
	requestTimeout time.Duration
	username       string
	password       string
	tls            *tls.Config
	tlsFiles       *tlsFiles
	quota          quota         // quota.go
	historyMax     int           // history.go: events kept; 0 turns it off
	historyAge     time.Duration // history.go: the oldest kept; 0: any age
}

type tlsFiles struct{ ca, cert, key string }

func defaultConfig() config {
	return config{
		prefix:         DefaultPrefix,
		logger:         log.NewNopLogger(),
		dialTimeout:    DefaultDialTimeout,
		requestTimeout: DefaultRequestTimeout,
		historyMax:     lease.DefaultHistoryMaxEvents,
		historyAge:     lease.DefaultHistoryMaxAge,
	}
}

// WithPrefix keeps every key of this store under prefix + "/" (default
// "picket"), so that several deployments can share one cluster. Stores with
// different prefixes never see each other's leases or fenced values; their
// tokens still never collide, since they are the cluster's revisions.
//
// A prefix must not contain "/" (Open refuses it with lease.ErrInvalid): then
// no deployment's key space prefix + "/" is a prefix of another's keys, which
// "x" and "x/kv" would be ("x"'s fenced key "leases/a" is "x/kv"'s lease
// key "a").
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithLockDelay is the lock-delay of acquires that do not ask for one
// (AcquireRequest.LockDelay 0): how long a name stays unavailable after a
// lease on it expires. Zero (the default) turns it off.
func WithLockDelay(d time.Duration) Option { return func(c *config) { c.lockDelay = d } }

// WithLogger sets the logger. Without it, or with a nil logger, nothing is
// logged.
func WithLogger(l log.Logger) Option { return func(c *config) { c.logger = l } }

// WithDialTimeout bounds the first connection to the cluster (zero: the
// default, 5 s; negative is lease.ErrInvalid from Open).
func WithDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

// WithRequestTimeout bounds each request to the cluster (zero: the default,
// 5 s; negative is lease.ErrInvalid from Open), so that a cluster without
// quorum answers lease.ErrUnavailable instead of leaving the caller waiting.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// WithAuth logs in to the cluster as username with password.
func WithAuth(username, password string) Option {
	return func(c *config) { c.username, c.password = username, password }
}

// WithTLS connects over TLS, trusting the CA certificates in the PEM file
// caFile (empty: the system's roots) and presenting the client certificate
// in certFile with its key in keyFile (both empty: none).
func WithTLS(caFile, certFile, keyFile string) Option {
	return func(c *config) { c.tlsFiles = &tlsFiles{caFile, certFile, keyFile} }
}

// WithTLSConfig connects over TLS with cfg.
func WithTLSConfig(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

func (c *config) validate() error {
	if c.prefix == "" {
		return invalidf("the prefix must not be empty")
	}
	if strings.Contains(c.prefix, "/") {
		// A store's keys are prefix + "/" + ...: were / allowed in a
		// prefix, "x/kv" would be a prefix of "x"'s fenced keys and the
		// two deployments would overwrite each other's keys.
		return invalidf("prefix %q must not contain /: it could name keys of the deployment with prefix %q (use - or . instead)",
			c.prefix, c.prefix[:strings.Index(c.prefix, "/")])
	}
	if err := storekit.ValidatePrefix(c.prefix); err != nil {
		return fmt.Errorf("etcd: prefix: %w", err)
	}
	if c.lockDelay < 0 || c.lockDelay > lease.MaxLockDelay || c.lockDelay%time.Millisecond != 0 {
		return invalidf("lock delay %v is not a whole number of milliseconds in [0, %v]", c.lockDelay, lease.MaxLockDelay)
	}
	if err := c.quota.validate(); err != nil {
		return err
	}
	if c.historyMax < 0 || c.historyAge < 0 {
		return invalidf("history retention %d events, %v is negative", c.historyMax, c.historyAge)
	}
	if c.dialTimeout < 0 || c.requestTimeout < 0 {
		return invalidf("timeouts must not be negative")
	}
	if c.dialTimeout == 0 {
		c.dialTimeout = DefaultDialTimeout
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = DefaultRequestTimeout
	}
	if (c.username == "") != (c.password == "") {
		return invalidf("a username needs a password and a password a username")
	}
	if c.tls != nil && c.tlsFiles != nil {
		return invalidf("WithTLS and WithTLSConfig exclude each other")
	}
	if c.logger == nil {
		c.logger = log.NewNopLogger()
	}
	return nil
}

// tlsConfig returns the TLS configuration the options ask for, or nil.
func (c *config) tlsConfig() (*tls.Config, error) {
	if c.tls != nil {
		return c.tls, nil
	}
	if c.tlsFiles == nil {
		return nil, nil
	}
	f := c.tlsFiles
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("etcd: tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd: tls ca: no certificate in %s", f.ca)
		}
		cfg.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, errors.New("etcd: tls: a client certificate needs its key and a key its certificate")
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("etcd: tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
