package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// fillHistory makes n grant and n release events in e's store, on n
// distinct names, from 16 goroutines (group commit keeps it quick).
func fillHistory(t *testing.T, e *env, n int) {
	t.Helper()
	owner := strings.Repeat("o", 200) // about 300 bytes of JSON an event
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				name := fmt.Sprintf("hist/%06d", i)
				g, err := e.store.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: "h", Owner: owner, TTL: time.Hour})
				if err == nil {
					err = e.store.Release(t.Context(), lease.ReleaseRequest{Name: name, Holder: "h", Token: g.Token})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// nonReader sends req on a new connection to addr with a small receive
// buffer, reads the status line of the answer if one comes within wait,
// and then never reads again; the connection stays open until the test
// ends. It returns the status ("" if none came).
func nonReader(t *testing.T, addr, req string, wait time.Duration) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Error(err)
		return ""
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil {
		return ""
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	return f[1]
}

// smallSendBuffer gives the server's side of each connection a small send
// buffer, so that an answer a client does not read stops the handler's
// Write after a few kilobytes, as a real slow reader across a network does.
func smallSendBuffer(hs *http.Server) {
	hs.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			_ = c.(*net.TCPConn).SetWriteBuffer(8 << 10)
		}
	}
}

// TestHistoryNonReaders: issue 38 item 1. 48 clients send GET
// /v1/history?limit=10000 (10,000 events, about 3 MB of JSON) and never
// read the answer, against a server that works on 16 requests at once and
// answers 2 lists at once. A history page is a list: at most 2 are being
// written at once, the others wait for a list slot holding no in-flight
// slot, so a well-behaved client's 20 acquire/release calls all succeed and
// the heap holds about 2 pages, not 16. On the code before, all 16
// in-flight slots were held by history answers for the 90 s write timeout
// and every other /v1/ request got 429. Its control is the mutant
// history-no-slot (server.go: history outside the list slots).
func TestHistoryNonReaders(t *testing.T) {
	const (
		clients  = 48
		inFlight = 16
		lists    = 2
		events   = 5001 // grants and as many releases: more than a page
	)
	e := newEnv(t, httpapi.WithMaxInFlight(inFlight), httpapi.WithMaxLists(lists))
	fillHistory(t, e, events)
	addr := serveOn(t, e.srv, smallSendBuffer)
	e.url, e.hc = "http://"+addr, &http.Client{}

	one := e.do(t, http.MethodGet, "/v1/history?limit=10000", "", http.Header{})
	if one.status != http.StatusOK || !strings.Contains(string(one.body), `"next":`) || strings.Count(string(one.body), `"seq":`) != lease.MaxHistoryLimit {
		t.Fatalf("a history page: %d, %d bytes, %d events", one.status, len(one.body), strings.Count(string(one.body), `"seq":`))
	}
	page := len(one.body)
	one = answer{}

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	req := "GET /v1/history?limit=10000 HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	statuses := make(chan string, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { statuses <- nonReader(t, addr, req, 3*time.Second) })
	}
	wg.Wait()
	close(statuses)
	count := map[string]int{}
	for s := range statuses {
		count[s]++
	}

	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	grew := int64(during.HeapInuse) - int64(before.HeapInuse)

	client := e.client(t)
	var refused int
	for i := range 20 {
		name := fmt.Sprint("good/", i)
		g, err := client.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: "h", TTL: time.Minute})
		if err == nil {
			err = client.Release(t.Context(), lease.ReleaseRequest{Name: name, Holder: "h", Token: g.Token})
		}
		switch {
		case errors.Is(err, httpapi.ErrTooManyRequests):
			refused++
		case err != nil:
			t.Fatalf("call %d: %v", i, err)
		}
	}
	t.Logf("a page is %d bytes; statuses of %d non-readers after 3 s: %v; heap grew %.1f MB; %d of 20 calls refused",
		page, clients, count, float64(grew)/1e6, refused)
	if count["200"] > lists {
		t.Errorf("%d history answers written at once, want at most %d (the list slots)", count["200"], lists)
	}
	if refused > 0 {
		t.Errorf("%d of 20 well-behaved calls refused with 429 beside the history clients", refused)
	}
	if limit := int64(6 * page); grew > limit {
		t.Errorf("the heap grew %d bytes under %d history clients, want under %d (6 pages)", grew, clients, limit)
	}
}

// TestAnswerTimeout: a short answer has a write deadline of its own, far
// below the long polls' 90 s. One client takes the only list slot with a
// history page it reads the first line of and then never reads again; with
// an answer timeout of 1 s its write fails, the slot is free, and another
// client's page is answered 200 within the list's 10 s wait for a slot. Long
// polls keep their own deadline: a watch and a waiting acquire of 2 s
// answer beside the 1 s timeout. On the code before, the first client held
// the slot for the http.Server's 90 s WriteTimeout and the second got 429.
// Its control is the mutant answer-deadline-off (httpserver.go: no deadline
// of its own for a short answer).
func TestAnswerTimeout(t *testing.T) {
	e := newEnv(t, httpapi.WithMaxLists(1), httpapi.WithAnswerTimeout(time.Second))
	fillHistory(t, e, 5001)
	addr := serveOn(t, e.srv, smallSendBuffer)
	e.url, e.hc = "http://"+addr, &http.Client{}

	req := "GET /v1/history?limit=10000 HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	if s := nonReader(t, addr, req, 10*time.Second); s != "200" {
		t.Fatalf("the non-reader's answer: %q", s)
	}
	if a := e.do(t, http.MethodGet, "/v1/history?limit=10", "", http.Header{}); a.status != http.StatusOK {
		t.Errorf("a page beside a client that does not read: %d %s", a.status, a.body)
	}

	// The long polls, each of 2 s, beside the 1 s answer timeout.
	if _, err := e.store.Acquire(t.Context(), lease.AcquireRequest{Name: "held", Holder: "h", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	first := e.do(t, http.MethodGet, "/v1/leases/held?wait=0s", "", http.Header{})
	var st struct {
		Cursor string `json:"cursor"`
	}
	if err := json.Unmarshal(first.body, &st); err != nil || st.Cursor == "" {
		t.Fatalf("a first read: %d %s", first.status, first.body)
	}
	if a := e.do(t, http.MethodGet, "/v1/leases/held?wait=2s&after="+st.Cursor, "", http.Header{}); a.status != http.StatusOK {
		t.Errorf("a 2 s watch: %d %s", a.status, a.body)
	}
	if a := e.do(t, http.MethodPost, "/v1/acquire", `{"name":"held","holder":"other","ttl_ms":60000,"wait_ms":2000}`, nil); a.status != http.StatusConflict {
		t.Errorf("a 2 s waiting acquire of a held name: %d %s", a.status, a.body)
	}
}
