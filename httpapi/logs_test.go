package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsHoldNoSecrets: refused requests whose holder is invalid (a
// trailing newline, a NUL, too long, not a string) or whose bearer token is
// wrong are logged (at debug) without the holder or the token, and the
// answers do not quote the holder either. The control is the message the
// validation of a holder gives (what the server logged before): it quotes
// the holder, so this test would catch it.
func TestLogsHoldNoSecrets(t *testing.T) {
	const secret = "s3cr3t-h0lder"
	const bearer = "s3cr3t-bearer"
	logs := &syncBuf{}
	e := newEnv(t, httpapi.WithLogger(log.NewLogfmtLogger(logs)), httpapi.WithAuthToken(bearer))
	auth := http.Header{"Authorization": {"Bearer " + bearer}, "Content-Type": {"application/json"}}
	for _, c := range []struct{ path, body string }{
		{"/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"` + secret + `\n"}`},
		{"/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"` + secret + `\u0000"}`},
		{"/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"` + secret + strings.Repeat("x", 300) + `"}`},
		{"/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":["` + secret + `"]}`},
		{"/v1/acquire", `{"name":"a\n","ttl_ms":1000,"holder":"` + secret + `"}`},
		{"/v1/renew", `{"name":"a","token":1,"holder":"` + secret + `\n"}`},
		{"/v1/release", `{"name":"a","token":1,"holder":"` + secret + `\u202e"}`},
		{"/v1/release", `{"name":"a","token":0,"holder":"` + secret + `"}`},
	} {
		a := e.do(t, http.MethodPost, c.path, c.body, auth)
		if a.status != 400 {
			t.Errorf("%s %s: %d %s, want 400", c.path, c.body, a.status, a.body)
		}
		if strings.Contains(string(a.body), secret) {
			t.Errorf("%s: the answer quotes the holder: %s", c.path, a.body)
		}
	}
	if a := e.do(t, http.MethodGet, "/v1/leases", "", http.Header{"Authorization": {"Bearer " + bearer + "-wrong"}}); a.status != 401 {
		t.Errorf("wrong bearer token: %d", a.status)
	}
	out := logs.String()
	if n := strings.Count(out, "request refused"); n != 9 {
		t.Errorf("%d refusals logged, want 9:\n%s", n, out)
	}
	for _, s := range []string{secret, bearer} {
		if strings.Contains(out, s) {
			t.Errorf("the log holds %q:\n%s", s, out)
		}
	}

	t.Run("control", func(t *testing.T) {
		err := lease.ReleaseRequest{Name: "a", Holder: secret + "\n", Token: 1}.Validate()
		if err == nil || !strings.Contains(err.Error(), secret) {
			t.Fatalf("the holder's own validation error %v does not quote it: the test cannot tell", err)
		}
	})
}
