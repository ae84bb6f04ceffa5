package httpapi

import (
	stdlog "log"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/picketlock/picket/lease"
)

// Defaults for the *http.Server that Server.HTTPServer returns.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second

	// DefaultReadTimeout bounds reading a whole request, body included. A
	// long poll (wait_ms) extends its own connection's deadline.
	DefaultReadTimeout = 30 * time.Second

	// DefaultWriteTimeout bounds a request from the end of its headers to the
	// end of its answer: longer than the longest wait_ms. It is the long
	// polls' bound; every other answer has DefaultAnswerTimeout.
	DefaultWriteTimeout = lease.MaxWait + 30*time.Second

	// DefaultAnswerTimeout bounds writing an answer that is not a long poll,
	// from the moment the request was admitted (its body read, its slot
	// taken): far below DefaultWriteTimeout, so that a client that never
	// reads its answer holds a slot and the answer's memory for seconds, not
	// for a long poll's minute and a half (issue 38).
	DefaultAnswerTimeout = 10 * time.Second

	// DefaultIdleTimeout bounds how long a kept-alive connection waits for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute

	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 64 << 10
)

// WithAnswerTimeout sets the time the Server gives a client to take an
// answer that is not a long poll (default DefaultAnswerTimeout), counted
// from the moment the request is admitted; past it the connection's write
// fails and the request lets go of its slot. Long polls (an acquire's
// wait_ms, a watch's wait) set their own deadline, wait plus a margin. 0
// leaves the http.Server's WriteTimeout alone; negative is lease.ErrInvalid
// from NewServer. A Server's option.
func WithAnswerTimeout(d time.Duration) Option {
	return serverOption("WithAnswerTimeout", func(c *config) { c.answerTimeout = d })
}

// answerDeadline sets the connection's write deadline to the answer
// timeout from now (a long poll moves it on once it starts waiting).
func (s *Server) answerDeadline(w http.ResponseWriter) {
	if s.answerTimeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.answerTimeout))
	}
}

// HTTPServer returns an *http.Server for s with every timeout set (the
// Default* constants) and its own errors logged to the Server's logger
// (WithLogger) at level warn. s.Drain is registered to run when Shutdown
// starts, so long polls end at once. Addr is left empty: listen first with
// net.Listen, so a bind error comes back at once, then call Serve. A caller
// that wraps s in middleware sets Handler to the wrapper.
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ErrorLog:          stdlog.New(log.NewStdlibAdapter(level.Warn(s.logger)), "", 0),
	}
	hs.RegisterOnShutdown(s.Drain)
	return hs
}
