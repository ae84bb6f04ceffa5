package httpapi

import (
	"crypto/sha256"

	"github.com/go-kit/log"
)

// Option configures a Server.
type Option interface{ applyServer(*Server) }

type serverOption func(*Server)

func (f serverOption) applyServer(s *Server) { f(s) }

// WithKV serves the fenced KV (PUT and GET /v1/kv/{key...}) from kv, usually
// the same storage/sqlite store that holds the leases. Without it the KV
// routes answer 404 not_found: serving values is a decision, so it is given
// explicitly rather than guessed from the store's type.
func WithKV(kv KV) Option { return serverOption(func(s *Server) { s.kv = kv }) }

// WithLogger sets the logger (default: none). The server logs 5xx answers at
// level error and every other failed request at level debug, with the keys
// msg, op, err; it never logs the Authorization header.
func WithLogger(l log.Logger) Option {
	return serverOption(func(s *Server) {
		if l == nil {
			l = log.NewNopLogger()
		}
		s.logger = l
	})
}

// WithMetrics counts into m instead of new Metrics; create m first when the
// store should feed its batch histogram (see Metrics.ObserveBatch).
// A nil m means new Metrics.
func WithMetrics(m *Metrics) Option { return serverOption(func(s *Server) { s.metrics = m }) }

// AuthOption is the bearer token, for a Server (an Option) or a Client (a
// ClientOption) alike.
type AuthOption struct{ token string }

// WithAuthToken sets the bearer token. On a Server, every /v1/ request then
// needs the header "Authorization: Bearer <tok>", compared in constant time,
// or it is answered 401 unauthorized; /healthz and /metrics stay open. A
// Client sends the header with every request. The empty token means no auth
// (the default). The caller trims a token it read from a file.
func WithAuthToken(tok string) AuthOption { return AuthOption{token: tok} }

func (o AuthOption) applyServer(s *Server) {
	if o.token == "" {
		s.auth = nil
		return
	}
	sum := sha256.Sum256([]byte(o.token))
	s.auth = &sum
}

func (o AuthOption) applyClient(c *Client) { c.auth = o.token }
