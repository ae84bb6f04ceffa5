package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// watchBody is a watch's answer as a test reads it.
type watchBody struct {
	Name   string `json:"name"`
	Held   bool   `json:"held"`
	Owner  string `json:"owner"`
	Token  uint64 `json:"token"`
	Reason string `json:"reason"`
	Cursor string `json:"cursor"`
}

func (e *env) watchGet(t *testing.T, query string) watchBody {
	t.Helper()
	a := e.do(t, http.MethodGet, "/v1/leases/w?"+query, "", nil)
	if a.status != http.StatusOK {
		t.Fatalf("GET ?%s: %d %s", query, a.status, a.body)
	}
	var b watchBody
	if err := json.Unmarshal(a.body, &b); err != nil {
		t.Fatalf("GET ?%s: %v in %s", query, err, a.body)
	}
	return b
}

// TestWatchLongPoll: the wire form of a watch. A free name is a 200 with
// held false (not the 404 of a plain GET); a cursor from one answer, passed
// back as after, waits until the state moves (a grant, then a release);
// a wait that runs out answers the same cursor.
func TestWatchLongPoll(t *testing.T) {
	e := newEnv(t)
	if a := e.do(t, http.MethodGet, "/v1/leases/w", "", nil); a.status != http.StatusNotFound {
		t.Fatalf("plain GET of a free name: %d %s, want 404", a.status, a.body)
	}
	free := e.watchGet(t, "wait=0s")
	if free.Held || free.Token != 0 || free.Name != "w" || free.Cursor == "" {
		t.Fatalf("first read of a free name: %+v", free)
	}
	same := e.watchGet(t, "wait=50ms&after="+free.Cursor)
	if same.Cursor != free.Cursor || same.Held {
		t.Fatalf("a wait that ran out: %+v, want the cursor %q again", same, free.Cursor)
	}

	done := make(chan watchBody, 1)
	go func() {
		a, err := e.send(t.Context(), http.MethodGet, "/v1/leases/w?wait=60s&after="+free.Cursor, "", nil)
		var b watchBody
		if err == nil && a.status == http.StatusOK {
			_ = json.Unmarshal(a.body, &b)
		}
		done <- b
	}()
	waitForWaiters(t, e.srv.Metrics(), 1) // the watch waits in a waiting slot
	g := e.acquire(t, "w", "h1", "o1", time.Hour)
	held := <-done
	if !held.Held || held.Token != g.Token || held.Owner != "o1" || held.Reason != "granted" {
		t.Fatalf("the watch woken by a grant: %+v", held)
	}
	if a := e.post(t, "/v1/release", fmt.Sprintf(`{"name":"w","holder":"h1","token":%d}`, g.Token)); a.status != 200 {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	rel := e.watchGet(t, "wait=60s&after="+held.Cursor)
	if rel.Held || rel.Token != g.Token || rel.Reason != "released" {
		t.Fatalf("after the release: %+v", rel)
	}
}

// TestWatchBadQuery: a bad wait, a cursor this server never gave, an
// unknown or repeated parameter are 400 bad_request, and nothing
// waits.
func TestWatchBadQuery(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"wait=forever", "wait=-1s", "wait=61s", "after=x.1.2", "after=h.1", "after=h.-1.0",
		"after=h.9007199254740992.0", "wait=1s&wait=2s", "since=1", "wait=1s&after=h.1.2&x=1"} {
		a := e.do(t, http.MethodGet, "/v1/leases/w?"+q, "", nil)
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"bad_request"`) {
			t.Errorf("GET ?%s: %d %s, want 400 bad_request", q, a.status, a.body)
		}
	}
}

// TestWatchDrained: a server shutting down ends a waiting watch with 503.
func TestWatchDrained(t *testing.T) {
	e := newEnv(t)
	free := e.watchGet(t, "wait=0s")
	done := make(chan int, 1)
	go func() {
		a, err := e.send(t.Context(), http.MethodGet, "/v1/leases/w?wait=60s&after="+free.Cursor, "", nil)
		if err != nil {
			done <- 0
			return
		}
		done <- a.status
	}()
	waitForWaiters(t, e.srv.Metrics(), 1)
	e.srv.Drain()
	if got := <-done; got != http.StatusServiceUnavailable {
		t.Fatalf("a watch during Drain: %d, want 503", got)
	}
}
