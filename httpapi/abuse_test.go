package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
)

// serveOn serves h on 127.0.0.1 with an http.Server made by tune from
// h.HTTPServer's (a test lowers its timeouts), and returns the address.
// Shutdown at the end of the test.
func serveOn(t *testing.T, h *httpapi.Server, tune func(*http.Server)) string {
	t.Helper()
	hs := h.HTTPServer()
	if tune != nil {
		tune(hs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			hs.Close()
		}
		<-served
	})
	return ln.Addr().String()
}

// slowClient is one slowloris connection: it sends head, then one byte of
// tail every gap, until the server closes the connection or window passes.
type slowClient struct {
	head, tail string
	gap        time.Duration
}

// slowResult is what a slow client saw.
type slowResult struct {
	closed bool          // the server closed the connection
	after  time.Duration // how long after the first byte
	sent   int           // bytes of tail sent by then
	answer string        // whatever the server wrote before closing
}

func (c slowClient) run(t *testing.T, addr string, window time.Duration) slowResult {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, c.head); err != nil {
		t.Fatal(err)
	}
	closed := make(chan string, 1)
	go func() { // the server's side of the story: whatever it sends, then EOF or an error
		var b strings.Builder
		_, _ = io.Copy(&b, conn)
		closed <- b.String()
	}()
	var res slowResult
	tick := time.NewTicker(c.gap)
	defer tick.Stop()
	for res.sent < len(c.tail) && time.Since(start) < window {
		select {
		case res.answer = <-closed:
			res.closed, res.after = true, time.Since(start)
			return res
		case <-tick.C:
			if _, err := conn.Write([]byte{c.tail[res.sent]}); err != nil {
				res.answer = <-closed
				res.closed, res.after = true, time.Since(start)
				return res
			}
			res.sent++
		}
	}
	select {
	case res.answer = <-closed:
		res.closed, res.after = true, time.Since(start)
	default:
	}
	return res
}

// slowHeader trickles a header that never ends; slowBody sends whole headers
// and trickles a body that never ends.
var (
	slowHeader = slowClient{
		head: "POST /v1/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
		tail: strings.Repeat("a", 4096),
		gap:  20 * time.Millisecond,
	}
	slowBody = slowClient{
		head: "POST /v1/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n",
		tail: `{"name":"` + strings.Repeat("a", 4096),
		gap:  20 * time.Millisecond,
	}
)

// TestSlowlorisCutOff: a client that trickles its request a byte at a time
// is cut off by the server's timeouts (lowered here from their defaults to
// keep the test short), while other clients are served; the control, a
// bare http.Server without timeouts, keeps the same client for the whole
// window, which shows the test can tell.
func TestSlowlorisCutOff(t *testing.T) {
	const window = 3 * time.Second // a slow client gives up after this; the timeouts are far shorter
	e := newEnv(t)
	hardened := func(hs *http.Server) {
		hs.ReadHeaderTimeout = 200 * time.Millisecond
		hs.ReadTimeout = 400 * time.Millisecond
	}
	for _, tc := range []struct {
		name string
		c    slowClient
	}{
		{"header", slowHeader},
		{"body", slowBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveOn(t, e.srv, hardened)
			// Many slow clients at once; a normal request is answered meanwhile.
			const n = 20
			results := make(chan slowResult, n)
			for range n {
				go func() { results <- tc.c.run(t, addr, window) }()
			}
			time.Sleep(50 * time.Millisecond)
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatalf("a normal request beside %d slow clients: %v", n, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("a normal request beside %d slow clients: status %d", n, resp.StatusCode)
			}
			for range n {
				r := <-results
				if !r.closed {
					t.Errorf("a slow client was still connected after %v, having sent %d bytes", window, r.sent)
					continue
				}
				if r.sent >= len(tc.c.tail) {
					t.Errorf("a slow client sent everything (%d bytes) before it was cut off", r.sent)
				}
				if r.answer != "" && !strings.HasPrefix(r.answer, "HTTP/1.1 4") {
					t.Errorf("a slow client was answered %q, want nothing or a 4xx", r.answer)
				}
			}
		})
	}
	t.Run("control without timeouts", func(t *testing.T) {
		addr := serveOn(t, e.srv, func(hs *http.Server) {
			hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout = 0, 0, 0, 0
		})
		r := slowHeader.run(t, addr, time.Second)
		if r.closed {
			t.Fatalf("a server without timeouts closed the slow client after %v: the test cannot tell", r.after)
		}
	})
}

// TestSlowlorisDefaultTimeout: the default header timeout is set and finite,
// so a slow client is cut off by default (the test above shows it works,
// with a shorter one).
func TestSlowlorisDefaultTimeout(t *testing.T) {
	hs := newEnv(t).srv.HTTPServer()
	if hs.ReadHeaderTimeout <= 0 || hs.ReadHeaderTimeout > time.Minute {
		t.Errorf("ReadHeaderTimeout = %v, want in (0, 1m]", hs.ReadHeaderTimeout)
	}
	if hs.ReadTimeout <= 0 || hs.ReadTimeout > time.Minute {
		t.Errorf("ReadTimeout = %v, want in (0, 1m]", hs.ReadTimeout)
	}
}

// TestFlood: 200 clients send requests as fast as they can (each at most
// 20, for at most 5 s): acquire, fenced put and release on 50 shared names,
// reads and lists. Every request is answered, each with 200, 404, 409 or
// 429 (never a 5xx, never a dropped connection, never after the 30 s a
// client waits); no token is granted twice; the server is healthy after.
// With a tight in-flight limit the excess is refused with 429 rather than
// queued.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood skipped in -short mode")
	}
	for _, tc := range []struct {
		name string
		opts []httpapi.Option
	}{
		{"default limits", nil},
		{"tight limit", []httpapi.Option{httpapi.WithMaxInFlight(8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts...)
			e.url = "http://" + serveOn(t, e.srv, nil)
			e.hc = &http.Client{
				Timeout:   30 * time.Second,
				Transport: &http.Transport{MaxIdleConnsPerHost: floodClients},
			}
			defer e.hc.CloseIdleConnections()
			f := flood(t, e)
			t.Logf("%d requests in %v: %v; latency p50 %v p99 %v max %v",
				f.requests, f.took.Round(time.Millisecond), f.statuses, f.quantile(0.5), f.quantile(0.99), f.quantile(1))
			for status, n := range f.statuses {
				switch status {
				case http.StatusOK, http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests:
				default:
					t.Errorf("%d answers with status %d", n, status)
				}
			}
			for _, err := range f.errs {
				t.Error(err)
			}
			if f.statuses[http.StatusOK] == 0 {
				t.Error("no request succeeded")
			}
			if a := e.do(t, http.MethodGet, "/healthz", "", nil); a.status != http.StatusOK {
				t.Errorf("healthz after the flood: %d %s", a.status, a.body)
			}
			g := e.acquire(t, "after-the-flood", "h", "o", time.Minute)
			if g.Token <= f.maxToken {
				t.Errorf("token %d after the flood, not above %d granted during it", g.Token, f.maxToken)
			}
		})
	}
}

const (
	floodClients  = 200
	floodRequests = 20 // per client
	floodTime     = 5 * time.Second
)

// floodResult is what the clients of a flood saw.
type floodResult struct {
	mu        sync.Mutex
	requests  int
	statuses  map[int]int
	latencies []time.Duration
	errs      []error
	tokens    map[uint64]bool
	maxToken  uint64
	took      time.Duration
}

func (f *floodResult) quantile(q float64) time.Duration {
	if len(f.latencies) == 0 {
		return 0
	}
	l := slices.Sorted(slices.Values(f.latencies))
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

func (f *floodResult) record(a answer, took time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if err != nil {
		f.errs = append(f.errs, err)
		return
	}
	f.statuses[a.status]++
	f.latencies = append(f.latencies, took)
}

func (f *floodResult) granted(tok uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tokens[tok] {
		f.errs = append(f.errs, fmt.Errorf("token %d granted twice", tok))
	}
	f.tokens[tok] = true
	f.maxToken = max(f.maxToken, tok)
}

// flood runs the clients against e.
func flood(t *testing.T, e *env) *floodResult {
	t.Helper()
	f := &floodResult{statuses: map[int]int{}, tokens: map[uint64]bool{}}
	ctx, cancel := context.WithTimeout(t.Context(), floodTime)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range floodClients {
		wg.Go(func() {
			send := func(method, path, body string, h http.Header) answer {
				begin := time.Now()
				a, err := e.send(context.Background(), method, path, body, h) // not ctx: every request sent is answered
				f.record(a, time.Since(begin), err)
				return a
			}
			name := fmt.Sprintf("flood%%2F%d", c%50)
			for i := 0; i < floodRequests && ctx.Err() == nil; i++ {
				switch i % 4 {
				case 0:
					holder := fmt.Sprintf("holder-%d-%d", c, i) // a fresh one: the same holder would get its grant back
					a := send(http.MethodPost, "/v1/acquire", fmt.Sprintf(`{"name":"flood/%d","ttl_ms":1000,"holder":%q}`, c%50, holder), nil)
					if a.status != http.StatusOK {
						continue
					}
					var g grantBody
					if err := json.Unmarshal(a.body, &g); err != nil {
						f.record(a, 0, fmt.Errorf("grant %s: %v", a.body, err))
						continue
					}
					f.granted(g.Token)
					send(http.MethodPut, "/v1/kv/"+name, "v", http.Header{"Fencing-Token": {fmt.Sprint(g.Token)}})
					send(http.MethodPost, "/v1/release", fmt.Sprintf(`{"name":"flood/%d","holder":%q,"token":%d}`, c%50, holder, g.Token), nil)
				case 1:
					send(http.MethodGet, "/v1/leases/"+name, "", nil)
				case 2:
					send(http.MethodGet, "/v1/leases?prefix=flood", "", nil)
				case 3:
					send(http.MethodGet, "/v1/kv/"+name, "", nil)
				}
			}
		})
	}
	wg.Wait()
	f.took = time.Since(start)
	return f
}
