package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Request bodies are read before a request takes an in-flight slot, so a
// client that sends its body slowly holds no slot (it would hold one for the
// whole 30 s read timeout otherwise, and a thousand such clients would have
// every other request answered 429). Reading them is bounded two ways:
//
//   - in time: a body must arrive within the body timeout (WithBodyTimeout,
//     DefaultBodyTimeout), far shorter than the whole-request timeout;
//   - in memory: the bytes of all the bodies being read or worked on at once
//     stay under a budget (WithBodyBudget, DefaultBodyBudget). A body takes
//     budget as its bytes arrive, so a slow sender holds only what it has
//     sent. A body that would go over the budget is answered 429
//     too_many_requests. Bodies past their first smallBody bytes may use only
//     three quarters of the budget: the last quarter is kept for small ones,
//     so that large uploads cannot crowd out leases' JSON requests.

// Defaults of the body limits.
const (
	// DefaultBodyTimeout bounds the time to receive a request's body, from
	// the end of its headers.
	DefaultBodyTimeout = 5 * time.Second

	// DefaultBodyBudget bounds the bytes of request bodies held at once.
	DefaultBodyBudget = 32 << 20

	// smallBody is the size up to which a body may use the whole budget.
	smallBody = 64 << 10
)

// WithBodyTimeout sets the time a request has to send its body once its
// headers are in (default DefaultBodyTimeout); a body that is not complete
// by then is answered 400 and the connection closed. 0 means no timeout of
// its own (the http.Server's ReadTimeout still applies); negative is
// lease.ErrInvalid from NewServer. A Server's option.
func WithBodyTimeout(d time.Duration) Option {
	return serverOption("WithBodyTimeout", func(c *config) { c.bodyTimeout = d })
}

// WithBodyBudget bounds the bytes of request bodies being read or worked on
// at once (default DefaultBodyBudget); a body that would go over it is
// answered 429 too_many_requests. 0 means no bound; negative is
// lease.ErrInvalid from NewServer. A Server's option.
func WithBodyBudget(n int64) Option {
	return serverOption("WithBodyBudget", func(c *config) { c.bodyBudget = n })
}

// budget counts bytes of bodies held; a max of 0 is no bound.
type budget struct {
	mu         sync.Mutex
	used, max  int64
	largeLimit int64 // what bodies past smallBody may use
}

func newBudget(n int64) *budget {
	if n <= 0 {
		return &budget{}
	}
	return &budget{max: n, largeLimit: n - n/4}
}

// take reserves n more bytes for a body that will then hold total; it
// reports false, reserving nothing, when that would go over the budget.
func (b *budget) take(n, total int64) bool {
	if b == nil {
		return true
	}
	limit := b.max
	if total > smallBody {
		limit = b.largeLimit
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if limit > 0 && b.used+n > limit {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse returns the bytes held.
func (b *budget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// body is a request body read in full; handlers read it from r.Body as
// before, or take its bytes.
type body struct {
	*bytes.Reader
	b []byte
}

func (body) Close() error { return nil }

// bodyBytes returns the bytes of r's body if it was read in full already.
func bodyBytes(r *http.Request) ([]byte, bool) {
	b, ok := r.Body.(body)
	return b.b, ok
}

// errBodyBudget answers a body that would take the server over its budget.
var errBodyBudget = fmt.Errorf("%w: too many request bodies are being read", ErrTooManyRequests)

// readBody reads r's body in full, within the body timeout and the budget,
// replaces r.Body with what it read, and returns the budget to give back
// when the request is done. started is when the handler began: the
// connection's read deadline goes back to started plus the http.Server's
// ReadTimeout afterwards (none if it has none), since a read deadline that
// passes while the request is being worked on cancels its context.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, started time.Time) (held int64, err error) {
	if r.ContentLength > MaxBodyBytes {
		return 0, &http.MaxBytesError{Limit: MaxBodyBytes}
	}
	if r.ContentLength == 0 {
		r.Body = body{Reader: bytes.NewReader(nil)}
		return 0, nil
	}
	if s.bodyTimeout > 0 {
		// The http.Server's ReadTimeout (whole, if any) bounds the request
		// as before; the body deadline only ever comes sooner.
		var whole time.Time
		if hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && hs.ReadTimeout > 0 {
			whole = started.Add(hs.ReadTimeout)
		}
		deadline := time.Now().Add(s.bodyTimeout)
		if !whole.IsZero() && whole.Before(deadline) {
			deadline = whole
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(deadline)
		defer func() {
			if err == nil {
				_ = rc.SetReadDeadline(whole)
			}
		}()
	}
	defer func() {
		if err != nil {
			s.bodies.give(held)
			held = 0
		}
	}()
	var buf []byte
	for {
		if r.ContentLength >= 0 && int64(len(buf)) == r.ContentLength {
			break
		}
		if len(buf) == cap(buf) {
			next := max(512, 2*cap(buf))
			if r.ContentLength >= 0 {
				next = min(next, int(r.ContentLength))
			}
			next = min(next, MaxBodyBytes+1) // one more: the reader's limit answers 413
			if !s.bodies.take(int64(next-cap(buf)), int64(next)) {
				return held, errBodyBudget
			}
			held += int64(next - cap(buf))
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			buf = nb
		}
		n, rerr := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return held, readError(rerr)
		}
	}
	r.Body = body{Reader: bytes.NewReader(buf), b: buf}
	return held, nil
}

// readError turns an error from reading a body into one the table maps.
func readError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("httpapi: body is over %d bytes: %w", mbe.Limit, err)
	case isTimeout(err):
		return invalid("the body did not arrive within the server's body timeout")
	case err == io.ErrUnexpectedEOF:
		return invalid("the body ended before its Content-Length")
	}
	return invalid("reading body: %v", err)
}
