package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Client is a lease.Store on a picket server, and a lease.KV for its fenced values.
// Errors come back as they would from an embedded store (see Error). A Client
// is safe for concurrent use.
type Client struct {
	base   string // the server's URL without a trailing slash
	hc     *http.Client
	auth   string
	admin  string // admin.go: sent on Revoke only
	logger log.Logger
}

var (
	_ lease.Store         = (*Client)(nil)
	_ lease.KV            = (*Client)(nil)
	_ lease.HealthChecker = (*Client)(nil)
)

// WithHTTPClient sends requests with hc instead of a new http.Client (also
// for a nil hc). Leave hc.Timeout zero or longer than lease.MaxWait: a
// request's context already bounds it, long polls included. A Client's
// option.
func WithHTTPClient(hc *http.Client) Option {
	return clientOption("WithHTTPClient", func(c *config) { c.hc = hc })
}

// NewClient returns a Client for the server at baseURL ("http://host:port",
// or with a path prefix behind a proxy). With WithAuthToken it sends the
// bearer token. Errors: one matching lease.ErrInvalid for a URL that is not
// absolute http or https, or for an option out of range or a Server's
// option (WithKV, say).
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	cfg, err := clientConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("httpapi: new client: %w", err)
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w: server URL: %v", lease.ErrInvalid, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("httpapi: %w: server URL %q is not http(s)://host[:port][/path]", lease.ErrInvalid, baseURL)
	}
	auth := cfg.auth
	if auth == "" {
		auth = cfg.admin // an admin with the admin token alone: it opens every route (admin.go)
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), hc: cfg.hc, auth: auth, admin: cfg.admin,
		logger: cfg.logger}, nil
}

// Acquire asks the server for the lease (POST /v1/acquire); req.Wait becomes
// wait_ms, so the server waits for the name to come free. ctx bounds the
// whole request, waiting included. Errors: lease.ErrInvalid (checked here
// first, nothing is sent), a *lease.HeldError (lease.ErrHeld),
// lease.ErrUnavailable (also when the server cannot be reached), ctx's error,
// or an *Error for other answers. A write whose answer was lost (ctx ended
// or the connection broke after the request left; or the server's store
// could not tell, 503 with "reason": "unknown") also matches
// lease.ErrUnknown, as every write method's error does then.
func (c *Client) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, err
	}
	body := acquireBody{Name: req.Name, TTLMS: req.TTL.Milliseconds(), Owner: req.Owner, Holder: req.Holder,
		LockDelayMS: req.LockDelay.Milliseconds()}
	if req.Wait > 0 {
		body.WaitMS = int64((req.Wait + time.Millisecond - 1) / time.Millisecond)
	}
	var g grantJSON
	if err := c.call(ctx, "acquire", subject{name: req.Name}, "/v1/acquire", body, &g); err != nil {
		return lease.Grant{}, err
	}
	return grantOf(g)
}

// Renew extends the lease (POST /v1/renew); a zero req.TTL keeps the lease's
// TTL. Errors: lease.ErrInvalid, lease.ErrLost, lease.ErrUnavailable, ctx's
// error (with lease.ErrUnknown, as for Acquire), or an *Error.
func (c *Client) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	if err := req.Validate(); err != nil {
		return lease.Grant{}, err
	}
	body := renewBody{Name: name, Holder: holder, Token: uint64(tok)}
	if ttl != 0 {
		ms := ttl.Milliseconds()
		body.TTLMS = &ms
	}
	var g grantJSON
	if err := c.call(ctx, "renew", subject{name: name, tok: tok}, "/v1/renew", body, &g); err != nil {
		return lease.Grant{}, err
	}
	return grantOf(g)
}

// Release frees the lease (POST /v1/release). Errors: lease.ErrInvalid,
// lease.ErrLost, lease.ErrUnavailable, ctx's error (with lease.ErrUnknown, as
// for Acquire), or an *Error.
func (c *Client) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	if err := req.Validate(); err != nil {
		return err
	}
	var out releasedJSON
	body := releaseBody{Name: name, Holder: holder, Token: uint64(tok)}
	if err := c.call(ctx, "release", subject{name: name, tok: tok}, "/v1/release", body, &out); err != nil {
		return err
	}
	if !out.Released {
		return fmt.Errorf("httpapi: release %q: the server answered 200 without \"released\": true", name)
	}
	return nil
}

// Get returns the public view of the live lease on name (GET
// /v1/leases/{name}). Errors: lease.ErrInvalid, lease.ErrNotFound,
// lease.ErrUnavailable, ctx's error, or an *Error.
func (c *Client) Get(ctx context.Context, name string) (lease.Info, error) {
	if err := storekit.ValidateName(name); err != nil {
		return lease.Info{}, err
	}
	var i infoJSON
	if err := c.call(ctx, "get", subject{name: name}, "/v1/leases/"+escapeName(name), nil, &i); err != nil {
		return lease.Info{}, err
	}
	return infoOf(i)
}

// List returns one page of the live leases whose names start with
// req.Prefix, sorted by name (GET /v1/leases?prefix=P&limit=N&after=NAME);
// lease.ListAll follows the pages. Errors: lease.ErrInvalid,
// lease.ErrUnavailable, ctx's error, or an *Error.
func (c *Client) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	if err := req.Validate(); err != nil {
		return lease.ListPage{}, err
	}
	q := url.Values{}
	if req.Prefix != "" {
		q.Set("prefix", req.Prefix)
	}
	if req.After != "" {
		q.Set("after", req.After)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	p := "/v1/leases"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out listJSON
	if err := c.call(ctx, "list", subject{name: req.Prefix}, p, nil, &out); err != nil {
		return lease.ListPage{}, err
	}
	page := lease.ListPage{Leases: make([]lease.Info, 0, len(out.Leases)), Next: out.Next}
	for _, j := range out.Leases {
		i, err := infoOf(j)
		if err != nil {
			return lease.ListPage{}, err
		}
		page.Leases = append(page.Leases, i)
	}
	return page, nil
}

// Health asks the server whether its store answers (GET /healthz). Errors:
// lease.ErrUnavailable (also when the server cannot be reached), ctx's
// error, or an *Error.
func (c *Client) Health(ctx context.Context) error {
	var out healthJSON
	return c.call(ctx, "health", subject{}, "/healthz", nil, &out)
}

// The request bodies the client sends.
type (
	acquireBody struct {
		Name   string `json:"name"`
		TTLMS  int64  `json:"ttl_ms"`
		Owner  string `json:"owner"`
		Holder string `json:"holder"`
		WaitMS int64  `json:"wait_ms,omitempty"`

		LockDelayMS int64 `json:"lock_delay_ms,omitempty"`
	}
	renewBody struct {
		Name   string `json:"name"`
		Holder string `json:"holder"`
		Token  uint64 `json:"token"`
		TTLMS  *int64 `json:"ttl_ms,omitempty"`
	}
	releaseBody struct {
		Name   string `json:"name"`
		Holder string `json:"holder"`
		Token  uint64 `json:"token"`
	}
)

// subject is what a request is about, to fill in the details of an error
// answer: the lease's name or the key, and the token sent.
type subject struct {
	name string
	tok  token.Token
}

// what names a request in its error: the operation, and the lease's name or
// the key when there is one ("health", "renew \"jobs\"").
func (s subject) what(op string) string {
	if s.name == "" {
		return op
	}
	return fmt.Sprintf("%s %q", op, s.name)
}

// call sends a JSON request (GET when body is nil, else POST) and decodes a
// 200 answer into out.
func (c *Client) call(ctx context.Context, op string, sub subject, path string, body, out any) error {
	return c.callAs(ctx, c.auth, op, sub, path, body, out)
}

// callAs is call with cred as the bearer token ("" for none).
func (c *Client) callAs(ctx context.Context, cred, op string, sub subject, path string, body, out any) error {
	method, ctype := http.MethodGet, ""
	var r io.Reader
	if body != nil {
		b, ok := encodeRequest(body) // fastjson.go
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return fmt.Errorf("httpapi: %s: %w", sub.what(op), err)
			}
		}
		method, ctype, r = http.MethodPost, "application/json", bytes.NewReader(b)
	}
	var hdr http.Header
	if cred != c.auth {
		hdr = http.Header{"Authorization": {"Bearer " + cred}}
		if cred == "" {
			hdr = http.Header{"Authorization": nil}
		}
	}
	resp, err := c.send(ctx, op, sub, method, path, ctype, r, hdr)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if err := decodeAnswer(resp.Body, out); err != nil {
		return fmt.Errorf("httpapi: %s: bad answer from the server: %w", sub.what(op), err)
	}
	return nil
}

// send sends one request and returns the answer if it is 200; any other
// status becomes its error (see answerError) and the body is closed.
func (c *Client) send(ctx context.Context, op string, sub subject, method, path, ctype string, body io.Reader, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %s: %w", sub.what(op), err)
	}
	for k, v := range hdr {
		if v != nil {
			req.Header[k] = v
		}
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if _, set := hdr["Authorization"]; !set && c.auth != "" {
		req.Header.Set("Authorization", "Bearer "+c.auth)
	}
	if err := ctx.Err(); err != nil { // nothing sent
		return nil, fmt.Errorf("httpapi: %s: %w", sub.what(op), err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("httpapi: %s: %w", sub.what(op), ctx.Err())
		} else {
			err = fmt.Errorf("httpapi: %s: %w: %w", sub.what(op), lease.ErrUnavailable, err)
		}
		level.Debug(c.logger).Log("msg", "no answer from the server", "op", op, "err", err)
		if method != http.MethodGet && !notSent(err) {
			// A write that may have reached the server, which may have
			// done it: only a new request can tell.
			err = storekit.Unknown(err)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer closeBody(resp)
		return nil, answerError(resp, sub)
	}
	return resp, nil
}

// notSent reports whether err, the error of an HTTP request, says the
// request never left: the connection to the server could not be made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// closeBody drains a little of what is left, so the connection can be
// reused, and closes the body.
func closeBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// escapeName escapes a name or key as one path segment: "/" becomes %2F,
// and a name that is all dots has them escaped too, so the server never sees
// a path it would have to clean.
func escapeName(name string) string {
	e := url.PathEscape(name)
	if strings.Trim(e, ".") == "" {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}
