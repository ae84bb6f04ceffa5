// Package httpapi puts a lease.Store on the network: Server serves HTTP API v1
// over any Store (storage/sqlite or storage/etcd), and Client is a
// lease.Store (and a lease.KV) that talks to such a server. A lease.Manager over a Client behaves as it does
// over an embedded store: the same grants, the same errors, the same
// KeepAlive and Context.
//
// # The idea
//
// A lock service across machines needs one place that hands out tokens:
// for picket, a SQLite file on one machine or an etcd cluster; this package
// lets many machines reach it.
// The server adds no lock logic of its own: every decision (who holds a name,
// which token comes next, when a lease has expired) is the store's, made on
// the store's clock. The server only decodes requests strictly, validates
// them, forwards them, and maps the store's errors to the wire through one
// table that the client reads back, so that
//
//	errors.Is(err, lease.ErrHeld)          errors.As(err, new(*lease.HeldError))
//	errors.Is(err, lease.ErrLost)          errors.Is(err, lease.ErrInvalid)
//	errors.Is(err, token.ErrStale)         errors.As(err, new(*token.StaleError))
//	errors.Is(err, lease.ErrNotFound)      errors.Is(err, lease.ErrUnavailable)
//	errors.Is(err, lease.ErrUnknown)
//
// hold across the wire exactly as they hold in process.
//
// Fencing lives where the data lives. Besides leases the server can keep
// fenced values (WithKV): PUT /v1/kv/{key} with a Fencing-Token header is
// refused with 409 stale_token once the key has seen a higher token, in the
// same transaction as the write.
//
// # The wire
//
// JSON in and out, except raw fenced values and /metrics. Errors are
// {"error": CODE, "message": TEXT}; see the Code constants. The routes:
//
//	POST   /v1/acquire        {"name", "ttl_ms", "owner"?, "holder"?, "wait_ms"?, "lock_delay_ms"?} → grant
//	POST   /v1/renew          {"name", "holder", "token", "ttl_ms"?}                 → grant
//	POST   /v1/release        {"name", "holder", "token"}                            → {"released": true}
//	GET    /v1/leases/{name}  → info, 404 when no live lease
//	GET    /v1/leases?prefix=P&limit=N&after=NAME → {"leases": [info...], "next"?} one page, by name
//	PUT    /v1/kv/{key}       raw value + Fencing-Token header → {"key", "token"}
//	GET    /v1/kv/{key}       → raw value, Fencing-Token header = highest token
//	DELETE /v1/kv/{key}       Fencing-Token header → {"key", "token", "deleted": true}; the token stays
//	GET    /healthz           → {"status": "ok"}, or 503 with the reason the store cannot grant
//	GET    /metrics           → Prometheus text format
//	GET    /ui                → the status page for people, HTML (ui.go; its own sign-in, ui_session.go)
//
// grant = {"name", "holder", "owner", "token", "ttl_ms", "expires_at"} with
// expires_at in RFC 3339, UTC; info is a grant without the holder, the secret
// that renew and release need. Names and keys in paths are percent-escaped;
// a path that is not canonical ("a//b", "." or ".." segments) is a 400, not
// a redirect, so a name with such parts escapes "/" as %2F. The contract is
// docs/http-api.md.
//
// # Hardening
//
// Web pages cannot drive the server (guard.go): a POST must be
// application/json (415), a request with an Origin header is 403 unless
// allowed (WithAllowedOrigins), and one that arrived on loopback must name
// loopback in its Host header (403 unless allowed, WithAllowedHosts: DNS
// rebinding). The status page's own origin may post to /ui paths only, where
// every change also needs a session cookie (SameSite=Strict) and its form
// token, and a revoke an admin session.
//
// Bodies are limited to MaxBodyBytes (413 too_large); a JSON body is exactly
// one object whose member names match exactly, each once, nothing unknown,
// nothing after it, no lone surrogate escape (400 bad_request). TTLs and
// waits out of bounds are refused, never clamped. No message quotes a
// holder. With WithAuthToken every /v1/ request needs "Authorization: Bearer
// <token>", compared in constant time; /healthz and /metrics stay open.
//
// A request's body is read in full before the request takes a slot
// (body.go), within a body timeout (WithBodyTimeout) and a budget of bytes
// for all bodies held at once (WithBodyBudget, 429 beyond it), so slow
// senders hold no slot and cannot make the server hold much memory.
// Server.HTTPServer sets the http.Server timeouts, so a client that sends its
// headers a byte at a time is cut off too; a long poll extends its own
// connection's deadlines.
//
// Admission control keeps a flood from slowing every request down: at most
// WithMaxInFlight /v1/ requests (DefaultMaxInFlight) are worked on at once,
// and one more is answered at once with 429 too_many_requests and
// Retry-After: 1, without reaching the store. Long polls wait in slots of
// their own (WithMaxWaiting, DefaultMaxWaiting), so waiters never take the
// short requests' slots, and lists take turns (WithMaxLists), so point reads
// always find a read connection. The Client returns ErrTooManyRequests, which
// matches lease.ErrUnavailable: lease.Manager backs off and tries again.
// /healthz and /metrics are never limited.
//
// # Wiring
//
// NewServer and NewClient take the same Option type: WithAuthToken,
// WithAdminToken and WithLogger configure either side; the others belong to
// one side, and the other side's constructor refuses them with
// lease.ErrInvalid.
//
//	m := httpapi.NewMetrics()
//	st, err := sqlite.Open(path, sqlite.WithBatchHook(m.ObserveBatch))
//	srv, err := httpapi.NewServer(st, httpapi.WithKV(st), httpapi.WithMetrics(m),
//		httpapi.WithAuthToken(tok), httpapi.WithLogger(logger))
//	hs := srv.HTTPServer() // Shutdown also ends long polls (Drain)
//	ln, err := net.Listen("tcp", addr)
//	err = hs.Serve(ln) // and hs.Shutdown(ctx) on a signal, then st.Close()
package httpapi
