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
	// end of its answer: longer than the longest wait_ms.
	DefaultWriteTimeout = lease.MaxWait + 30*time.Second

	// DefaultIdleTimeout bounds how long a kept-alive connection waits for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute

	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 64 << 10
)

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
