package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestSlowBodies: 64 loopback connections send their headers and then
// dribble a body a byte every 50 ms, against a server that works on at most
// 16 requests at once, with the default http.Server timeouts (30 s for the
// whole request) and a 1.5 s body timeout. Meanwhile a well-behaved client
// acquires and releases 20 times: every call succeeds, because a request
// takes its in-flight slot only once its body is in. Every slow connection
// is answered 400 and closed by the body timeout, long before the 30 s read
// timeout. Its control is the mutant slot-before-body (testdata/controls/:
// the old order, the slot taken before the body): the slow bodies hold
// every slot and the well-behaved client is refused with 429.
func TestSlowBodies(t *testing.T) {
	const (
		slow        = 64
		inFlight    = 16
		bodyTimeout = 1500 * time.Millisecond
		window      = 5 * time.Second // a slow client gives up after this
	)
	e := newEnv(t, httpapi.WithMaxInFlight(inFlight), httpapi.WithBodyTimeout(bodyTimeout))
	addr := serveOn(t, e.srv, nil) // Server.HTTPServer's defaults: 30 s ReadTimeout
	e.url = "http://" + addr
	e.hc = &http.Client{}

	c := slowClient{
		head: "POST /v1/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n",
		tail: `{"name":"` + strings.Repeat("a", 4096),
		gap:  50 * time.Millisecond,
	}
	results := make(chan slowResult, slow)
	var wg sync.WaitGroup
	for range slow {
		wg.Go(func() { results <- c.run(t, addr, window) })
	}
	time.Sleep(300 * time.Millisecond) // let them all send their headers

	client := e.client(t)
	var refused, failed int
	for i := range 20 {
		name := fmt.Sprint("good/", i)
		g, err := client.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Minute})
		if err == nil {
			err = client.Release(t.Context(), lease.ReleaseRequest{Name: name, Holder: "h", Token: g.Token})
		}
		switch {
		case err == nil:
		case errors.Is(err, httpapi.ErrTooManyRequests):
			refused++
		default:
			failed++
			t.Errorf("well-behaved call %d: %v", i, err)
		}
	}
	wg.Wait()
	close(results)
	var cut int
	var latest time.Duration
	for r := range results {
		if r.closed && strings.HasPrefix(r.answer, "HTTP/1.1 400") {
			cut++
			latest = max(latest, r.after)
		}
	}
	t.Logf("well-behaved calls: %d refused 429, %d failed; %d of %d slow bodies cut with 400, the last after %v",
		refused, failed, cut, slow, latest.Round(time.Millisecond))
	if refused > 0 {
		t.Errorf("%d of 20 well-behaved calls were refused 429 beside %d slow bodies", refused, slow)
	}
	if cut != slow {
		t.Errorf("%d of %d slow bodies were cut off with 400 within %v", cut, slow, window)
	}
	if latest >= window {
		t.Errorf("the last slow body was cut after %v, not by the %v body timeout", latest, bodyTimeout)
	}
}
