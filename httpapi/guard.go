package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Web pages must not drive a picket server. A page a developer opens can
// send requests to any address, their local server included: a form or a
// no-cors fetch POSTs text/plain across origins without asking (CSRF), and a
// name the attacker controls can be made to resolve to 127.0.0.1 once the
// page has loaded (DNS rebinding), so that its requests look same-origin to
// the browser. Three checks close both ways in:
//
//   - a POST must say Content-Type: application/json, which a browser sends
//     across origins only after a CORS preflight, and the server never grants
//     one (415 unsupported_media_type);
//   - a request with an Origin header comes from a page: 403 forbidden unless
//     the origin is allowed (WithAllowedOrigins);
//   - a request that reached the server on a loopback address must name
//     loopback in its Host header (localhost, *.localhost, 127.0.0.0/8,
//     [::1], any port) unless the host is allowed (WithAllowedHosts): a
//     rebound name is refused with 403 forbidden.
//
// The Host check looks at the address each connection arrived on, not at
// what the server was told to listen on: a server bound to 127.0.0.1 checks
// every request, and one bound to 0.0.0.0 checks those that come in over
// loopback, which is where a local browser's rebound requests come from.
//
// The status page under /ui is a web page: its own form posts carry its own
// origin, which the Origin check lets in for /ui paths only (uiSameOrigin);
// every other origin is refused there as on /v1/. The Host check is the
// same for the page, so a rebound name cannot reach it either.

// ErrForbidden: the request came from a web page (an Origin header) or named
// a foreign host on a loopback connection.
var ErrForbidden = errors.New("httpapi: forbidden")

// ErrUnsupportedMediaType: a POST body that is not Content-Type
// application/json.
var ErrUnsupportedMediaType = errors.New("httpapi: unsupported media type")

// WithAllowedOrigins lets requests carrying one of these Origin headers in
// ("https://app.example.com", scheme, host and port as the browser sends
// them; "*" allows every origin). By default a request with any Origin
// header is answered 403 forbidden. Allowing an origin does not answer CORS
// preflights: a page of that origin can send what a browser sends without
// one. A Server's option.
func WithAllowedOrigins(origins ...string) Option {
	return serverOption("WithAllowedOrigins", func(c *config) {
		for _, o := range origins {
			c.origins = append(c.origins, strings.ToLower(strings.TrimSuffix(o, "/")))
		}
	})
}

// WithAllowedHosts lets requests that arrive on a loopback address name
// these hosts in their Host header, on any port ("locks.internal"; "*"
// allows every host). By default such requests must name loopback:
// localhost, a name under .localhost, an address in 127.0.0.0/8, or [::1].
// A Server's option.
func WithAllowedHosts(hosts ...string) Option {
	return serverOption("WithAllowedHosts", func(c *config) {
		for _, h := range hosts {
			c.hosts = append(c.hosts, strings.ToLower(strings.TrimSuffix(h, ".")))
		}
	})
}

// guard refuses a request from a web page or a rebound name; nil lets it in.
func (s *Server) guard(r *http.Request) error {
	if origin, ok := r.Header["Origin"]; ok {
		o := ""
		if len(origin) > 0 {
			o = origin[0]
		}
		if !s.originAllowed(o) && !uiSameOrigin(r, o) {
			return fmt.Errorf("%w: requests from web pages (Origin %q) are refused; allow the origin with -allow-origin", ErrForbidden, o)
		}
	}
	if onLoopback(r) && !s.hostAllowed(r.Host) {
		return fmt.Errorf("%w: this server listens on loopback and answers only Host values that name it (localhost, 127.0.0.1, [::1]), not %q; allow a name with -allow-host", ErrForbidden, r.Host)
	}
	return nil
}

func (s *Server) originAllowed(o string) bool {
	o = strings.ToLower(o)
	for _, a := range s.origins {
		if a == "*" || a == o {
			return true
		}
	}
	return false
}

// hostAllowed reports whether the Host header h names loopback or an
// allowed host.
func (s *Server) hostAllowed(h string) bool {
	host := h
	if hp, _, err := net.SplitHostPort(h); err == nil {
		host = hp
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	if host == "" {
		return false
	}
	for _, a := range s.hosts {
		if a == "*" || a == host {
			return true
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback reports whether r arrived on a loopback address.
func onLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return false
		}
		ip = net.ParseIP(host)
	}
	return ip != nil && ip.IsLoopback()
}

// checkJSON refuses a POST whose body is not declared application/json.
func checkJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("%w: POST bodies must be Content-Type: application/json, not %q", ErrUnsupportedMediaType, ct)
	}
	return nil
}

// uiSameOrigin reports whether r is for the status page (/ui and below) and
// o, its Origin header, is the page's own: the scheme r came in with and its
// Host. Under DNS rebinding Host and Origin agree too, which is why the Host
// check (hostAllowed) still runs after this one.
func uiSameOrigin(r *http.Request, o string) bool {
	if r.URL.Path != "/ui" && !strings.HasPrefix(r.URL.Path, "/ui/") {
		return false
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return r.Host != "" && strings.EqualFold(o, scheme+r.Host)
}
