package token_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
)

// TestMiddlewareCanonicalPaths checks that, by default, a resource has one
// name: after token 5 on /jobs/1, token 4 sent to another spelling of the
// same path is refused (400), never admitted as a new resource.
func TestMiddlewareCanonicalPaths(t *testing.T) {
	var (
		fence  token.Fence
		mu     sync.Mutex
		writes []string
	)
	h := token.Middleware(&fence, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		writes = append(writes, r.Header.Get(token.Header)+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(rawPath, tok string) response { return sendRaw(t, srv.URL, rawPath, tok) }
	if got := send("/jobs/1", "5"); got.Status != 204 {
		t.Fatalf("token 5 on /jobs/1: %+v", got)
	}
	tests := []struct {
		name string
		path string
		want string // the canonical path the 400 names
	}{
		{"trailing slash", "/jobs/1/", "/jobs/1"},
		{"double slash", "//jobs/1", "/jobs/1"},
		{"inner double slash", "/jobs//1", "/jobs/1"},
		{"dot segment", "/jobs/./1", "/jobs/1"},
		{"dot-dot segment", "/jobs/x/../1", "/jobs/1"},
		{"escaped dot", "/jobs/%2E/1", "/jobs/1"},
		{"escaped dot-dot", "/jobs/x/%2E%2E/1", "/jobs/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := send(tt.path, "4")
			if got.Status != http.StatusBadRequest || got.Body["error"] != "bad_request" ||
				!strings.Contains(got.Body["message"].(string), `not canonical, send "`+tt.want+`"`) {
				t.Errorf("token 4 on %s after token 5 on /jobs/1: %+v; want 400 naming %s", tt.path, got, tt.want)
			}
		})
	}
	if got := send("/jobs/1", "4"); got.Status != http.StatusConflict {
		t.Errorf("token 4 on /jobs/1: %+v, want 409", got)
	}
	if got := send("/", "1"); got.Status != 204 {
		t.Errorf("token 1 on /: %+v, want 204", got)
	}
	if diff := cmp.Diff([]string{"5 /jobs/1", "1 /"}, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// TestMiddlewareTimeoutHandler checks the hazard of a handler that goes on
// writing after it returns, with http.TimeoutHandler: token 4's write runs
// past the timeout, then token 5 writes. Wrapped directly, the middleware
// refuses the TimeoutHandler (a panic at setup). Outside the middleware, the
// TimeoutHandler answers 503 to token 4 but the turn stays with 4's write
// until it is done, so 5 writes after it. The control hides the
// TimeoutHandler from the middleware and shows what the refusal prevents:
// the turn passes to 5 while 4 is still writing, and 4 writes last.
func TestMiddlewareTimeoutHandler(t *testing.T) {
	t.Run("wrapping a TimeoutHandler panics", func(t *testing.T) {
		defer func() {
			msg, _ := recover().(string)
			if !strings.Contains(msg, "put the TimeoutHandler outside") {
				t.Errorf("recovered %q; want a panic saying where the TimeoutHandler goes", msg)
			}
		}()
		var fence token.Fence
		token.Middleware(&fence, nil)(http.TimeoutHandler(http.NotFoundHandler(), time.Second, ""))
		t.Error("no panic")
	})

	arrangements := []struct {
		name  string
		build func(mw func(http.Handler) http.Handler, h http.Handler, dt time.Duration) http.Handler
		want  []string // the order of the writes
		// fiveFirst: 5 can write while 4's write runs, so wait for it
		// before letting 4 finish (else give 5 a moment to try).
		fiveFirst bool
	}{
		{
			name: "TimeoutHandler outside",
			build: func(mw func(http.Handler) http.Handler, h http.Handler, dt time.Duration) http.Handler {
				return http.TimeoutHandler(mw(h), dt, "timeout")
			},
			want: []string{"4", "5"},
		},
		{
			name: "control: TimeoutHandler hidden inside",
			build: func(mw func(http.Handler) http.Handler, h http.Handler, dt time.Duration) http.Handler {
				th := http.TimeoutHandler(h, dt, "timeout")
				return mw(http.HandlerFunc(th.ServeHTTP))
			},
			want:      []string{"5", "4"}, // the stale write lands last
			fiveFirst: true,
		},
	}
	for _, a := range arrangements {
		t.Run(a.name, func(t *testing.T) {
			var (
				fence   token.Fence
				mu      sync.Mutex
				writes  []string
				release = make(chan struct{})
				wrote   = make(chan struct{}, 2)
			)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok := r.Header.Get(token.Header)
				if tok == "4" {
					<-release // a slow write
				}
				mu.Lock()
				writes = append(writes, tok)
				mu.Unlock()
				wrote <- struct{}{}
				w.WriteHeader(http.StatusNoContent)
			})
			// Token 4's write blocks until released, so it runs past any
			// timeout; the timeout is long enough for 5 to wait its turn.
			srv := httptest.NewServer(a.build(token.Middleware(&fence, nil), h, time.Second))
			defer srv.Close()
			send := func(tok string) int {
				req, err := http.NewRequest(http.MethodPut, srv.URL+"/jobs/1", nil)
				if err != nil {
					t.Error(err)
					return 0
				}
				req.Header.Set(token.Header, tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return 0
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := send("4"); got != http.StatusServiceUnavailable {
				t.Fatalf("token 4: status %d, want the TimeoutHandler's 503", got)
			}
			// 4's write is still running. Send 5, give it time to write if
			// the turn lets it, then let 4's write finish.
			done := make(chan int, 1)
			go func() { done <- send("5") }()
			wait := 100 * time.Millisecond
			if a.fiveFirst {
				wait = 10 * time.Second
			}
			status5 := 0
			select {
			case status5 = <-done:
			case <-time.After(wait):
			}
			close(release)
			for range 2 {
				select {
				case <-wrote:
				case <-time.After(10 * time.Second):
					t.Fatal("a write never happened")
				}
			}
			if status5 == 0 {
				status5 = <-done
			}
			if status5 != http.StatusNoContent {
				t.Errorf("token 5: status %d, want 204", status5)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(a.want, writes); diff != "" {
				t.Errorf("order of the writes (-want +got):\n%s", diff)
			}
		})
	}
}

// sendRaw sends a PUT with a Fencing-Token to the request target rawPath
// exactly as given (Go's client would turn "//jobs/1" into a host name), and
// decodes the answer.
func sendRaw(t *testing.T, serverURL, rawPath, tok string) response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(serverURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		rawPath, token.Header, tok)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := response{Status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		if err := json.NewDecoder(resp.Body).Decode(&got.Body); err != nil {
			t.Errorf("decode error body: %v", err)
		}
	}
	return got
}
