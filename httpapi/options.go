package httpapi

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log"

	"github.com/picketlock/picket/lease"
)

// Option configures a Server (NewServer) or a Client (NewClient): one type
// for both, so that the options both sides share (WithAuthToken,
// WithAdminToken, WithLogger) are given the same way to each. An option
// that only one side uses (WithKV, WithHTTPClient, ...) is lease.ErrInvalid
// from the other's constructor, as is a value out of range: a misplaced
// option is a mistake said at once, not a setting silently ignored.
type Option func(*config)

// config is what the options set, for both sides.
type config struct {
	// Both sides.
	auth   string
	admin  string
	logger log.Logger

	// A Server's.
	kv             lease.KV
	metrics        *Metrics
	inFlight       int
	waiting        int
	lists          int
	bodyTimeout    time.Duration
	answerTimeout  time.Duration
	bodyBudget     int64
	origins, hosts []string
	noUI           bool

	// A Client's.
	hc *http.Client

	// The names of the one-side options given, for the other side's
	// constructor to refuse.
	serverOnly, clientOnly []string
}

// newConfig applies opts over the defaults.
func newConfig(opts []Option) config {
	c := config{
		inFlight:      DefaultMaxInFlight,
		waiting:       DefaultMaxWaiting,
		lists:         DefaultMaxLists,
		bodyTimeout:   DefaultBodyTimeout,
		answerTimeout: DefaultAnswerTimeout,
		bodyBudget:    DefaultBodyBudget,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.logger == nil {
		c.logger = log.NewNopLogger()
	}
	return c
}

// serverConfig returns the configuration opts give a Server, or an error
// matching lease.ErrInvalid.
func serverConfig(opts []Option) (config, error) {
	c := newConfig(opts)
	switch {
	case len(c.clientOnly) > 0:
		return config{}, fmt.Errorf("%w: %s configures a Client, not a Server", lease.ErrInvalid, c.clientOnly[0])
	case c.inFlight < 0 || c.waiting < 0 || c.lists < 0:
		return config{}, fmt.Errorf("%w: a negative bound (in flight %d, waiting %d, lists %d)", lease.ErrInvalid, c.inFlight, c.waiting, c.lists)
	case c.bodyTimeout < 0:
		return config{}, fmt.Errorf("%w: body timeout %v is negative", lease.ErrInvalid, c.bodyTimeout)
	case c.answerTimeout < 0:
		return config{}, fmt.Errorf("%w: answer timeout %v is negative", lease.ErrInvalid, c.answerTimeout)
	case c.bodyBudget < 0:
		return config{}, fmt.Errorf("%w: body budget %d is negative", lease.ErrInvalid, c.bodyBudget)
	}
	return c, nil
}

// clientConfig returns the configuration opts give a Client, or an error
// matching lease.ErrInvalid.
func clientConfig(opts []Option) (config, error) {
	c := newConfig(opts)
	if len(c.serverOnly) > 0 {
		return config{}, fmt.Errorf("%w: %s configures a Server, not a Client", lease.ErrInvalid, c.serverOnly[0])
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	return c, nil
}

// serverOption marks an option as a Server's.
func serverOption(name string, set func(*config)) Option {
	return func(c *config) {
		c.serverOnly = append(c.serverOnly, name)
		set(c)
	}
}

// clientOption marks an option as a Client's.
func clientOption(name string, set func(*config)) Option {
	return func(c *config) {
		c.clientOnly = append(c.clientOnly, name)
		set(c)
	}
}

// tokenSum is the SHA-256 of tok, which the Server compares, or nil for the
// empty token (none).
func tokenSum(tok string) *[sha256.Size]byte {
	if tok == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(tok))
	return &sum
}

// WithKV serves the fenced KV (PUT and GET /v1/kv/{key...}) from kv, usually
// the same store that holds the leases (storage/sqlite and storage/etcd are
// both a lease.KV). Without it, or with a
// nil kv, the KV routes answer 404 not_found: serving values is a decision,
// so it is given explicitly rather than guessed from the store's type. A
// Server's option.
func WithKV(kv lease.KV) Option { return serverOption("WithKV", func(c *config) { c.kv = kv }) }

// WithLogger sets the logger, for a Server or a Client. Without it, or with
// a nil logger, nothing is logged. A Server logs 5xx answers at level error
// and every other failed request at level debug, with the keys msg, op,
// err, and the errors of its http.Server (Server.HTTPServer) at level warn;
// a Client logs a request that got no answer at level debug. Neither logs
// the Authorization header.
func WithLogger(l log.Logger) Option { return func(c *config) { c.logger = l } }

// WithMetrics counts into m instead of new Metrics; create m first when the
// store should feed its batch histogram (see Metrics.ObserveBatch).
// A nil m means new Metrics. A Server's option.
func WithMetrics(m *Metrics) Option {
	return serverOption("WithMetrics", func(c *config) { c.metrics = m })
}

// WithAuthToken sets the bearer token, for a Server or a Client. On a
// Server, every /v1/ request then needs the header "Authorization: Bearer
// <tok>", compared in constant time, or it is answered 401 unauthorized;
// /healthz and /metrics stay open. A Client sends the header with every
// request. The empty token means no auth (the default). The caller trims a
// token it read from a file.
func WithAuthToken(tok string) Option { return func(c *config) { c.auth = tok } }
