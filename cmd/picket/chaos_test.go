//go:build linux

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, for PRAGMA integrity_check

	"github.com/picketlock/picket/token"
)

// The fenced chaos test: real worker processes contend for one lease
// through a real "picket serve" and write to its fenced KV with their
// tokens, while the test pauses workers (SIGSTOP for 0.5–3 TTLs, then
// SIGCONT) and kills the server with SIGKILL and restarts it on the same
// file and address. The workers log every grant and write on a clock all
// processes share; the checker (chaos_check_test.go) then judges the run.
//
// The short run takes about 8 s (longer only if no stale write was refused
// yet, 20 s at most); PICKET_SOAK=1 runs 2–4 minutes with 20 restarts.
// PICKET_CHAOS_SEED fixes the chaos loop's choices (the timing of the
// processes stays the machine's); PICKET_CHAOS_REPORT=file appends each
// run's numbers to file as a JSON line.
//
//	go test -run 'TestChaos' -v ./cmd/picket/

const (
	chaosLease = "chaos"
	chaosKey   = "chaos/value"
	chaosTTL   = 300 * time.Millisecond
)

// chaosPlan is how long and how hard a run shakes the workers.
type chaosPlan struct {
	workers  int
	base     time.Duration // the run lasts at least this long
	limit    time.Duration // and at most this long, while done says it is not done yet
	restarts int           // server kill -9 and restarts, spread over base
	done     func(r *chaosRun) bool
}

func defaultPlan() chaosPlan {
	p := chaosPlan{workers: 5, base: 8 * time.Second, limit: 20 * time.Second, restarts: 3}
	if os.Getenv("PICKET_SOAK") == "1" {
		p.base, p.limit, p.restarts = 2*time.Minute, 4*time.Minute, 20
	}
	return p
}

// TestChaosFenced runs the workers against picket's fenced KV and checks
// that no pause and no crash broke the promise, and that the danger was
// really there: some late writes were refused as stale.
func TestChaosFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	plan := defaultPlan()
	plan.done = func(r *chaosRun) bool { return r.rejected() > 0 }

	db := tempDB(t)
	srv := startServer(t, db)
	r := newChaosRun(t, plan, srv.url, srv.url)
	r.servers = []*server{srv}
	r.restart = func() *server {
		return startServer(t, db, "-addr", strings.TrimPrefix(srv.url, "http://"))
	}
	r.run()

	h := r.history()
	r.report(h)
	for _, v := range h.violations() {
		t.Error(v)
	}
	if r.rejected() == 0 {
		t.Errorf("no stale write was rejected in %v with %d pauses: the danger was not exercised; "+
			"pause longer or more often", r.elapsed, r.pauses)
	}
	if h.count(outcomeAck) == 0 {
		t.Error("no write was acknowledged")
	}
	if len(r.marks) != plan.restarts {
		t.Errorf("%d restarts, want %d", len(r.marks), plan.restarts)
	}
	if _, judged := h.judgeRestarts(); plan.restarts > 0 && judged == 0 {
		t.Error("no grant was asked for after a restart: the restart check judged nothing")
	}

	// The key keeps the highest token written; then the file is whole.
	last := r.servers[len(r.servers)-1]
	_, highest, err := client(t, last.url).GetFenced(context.Background(), chaosKey)
	if err != nil {
		t.Fatalf("GetFenced(%q): %v", chaosKey, err)
	}
	for _, w := range h.writes {
		if w.outcome == outcomeAck && w.token > uint64(highest) {
			t.Errorf("the key's highest token is %d, below the acknowledged token %d", highest, w.token)
		}
	}
	if code := last.stop(t, os.Interrupt); code != 0 {
		t.Errorf("picket serve exited %d:\n%s", code, last.logs)
	}
	chaosIntegrityCheck(t, db)
}

// TestChaosUnfencedControl runs the same workers and pauses with the writes
// going to a store that accepts every write (no fence): the checker must
// report the lost update the fence prevents.
func TestChaosUnfencedControl(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	plan := defaultPlan()
	plan.restarts = 0
	plan.base, plan.limit = 2*time.Second, 20*time.Second
	plan.done = func(r *chaosRun) bool {
		h, err := buildHistory(r.snapshot(), nil)
		return err == nil && len(h.lostUpdates()) > 0
	}

	srv := startServer(t, tempDB(t))
	kv := newUnfencedKV()
	ts := httptest.NewServer(kv)
	t.Cleanup(ts.Close)
	r := newChaosRun(t, plan, srv.url, ts.URL)
	r.run()

	h := r.history()
	r.report(h)
	if n := r.rejected(); n != 0 {
		t.Errorf("the unfenced store rejected %d writes", n)
	}
	lost := h.lostUpdates()
	if len(lost) == 0 {
		t.Fatalf("the checker found no lost update in %v of an unfenced run with %d pauses", r.elapsed, r.pauses)
	}
	t.Logf("the checker caught %d lost updates without a fence; the first: %s", len(lost), lost[0])
	if v := append(h.duplicateTokens(), h.tokensAfterRestarts()...); len(v) > 0 {
		t.Errorf("the lease server broke the promise in the control run: %q", v)
	}
	if kv.overwrites() == 0 {
		t.Error("the unfenced store never took a lower token after a higher one")
	}
}

// unfencedKV is the control's store: it takes every PUT /v1/kv/{key}, whatever
// its Fencing-Token, and answers as picket would.
type unfencedKV struct {
	mu      sync.Mutex
	highest uint64
	lower   int // writes taken with a token below the highest taken before
}

func newUnfencedKV() *unfencedKV { return &unfencedKV{} }

func (kv *unfencedKV) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/v1/kv/")
	tok, err := token.FromRequest(r)
	if r.Method != http.MethodPut || !ok || err != nil {
		http.Error(w, `{"error":"bad_request","message":"only PUT /v1/kv/{key} with a token"}`, http.StatusBadRequest)
		return
	}
	kv.mu.Lock()
	if uint64(tok) < kv.highest {
		kv.lower++
	}
	kv.highest = max(kv.highest, uint64(tok))
	kv.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"key":%q,"token":%d}`+"\n", key, tok)
}

func (kv *unfencedKV) overwrites() int {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.lower
}

// chaosIntegrityCheck runs PRAGMA integrity_check on the file.
func chaosIntegrityCheck(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Errorf("PRAGMA integrity_check = %q, %v; want ok", res, err)
	}
}

// chaosSeed returns PICKET_CHAOS_SEED or a fresh seed, logged either way.
func chaosSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("PICKET_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PICKET_CHAOS_SEED: %v", err)
		}
	}
	t.Logf("chaos seed %d (PICKET_CHAOS_SEED=%d repeats the chaos loop's choices)", seed, seed)
	return seed
}

// chaosReport is the numbers of one run, logged and, with
// PICKET_CHAOS_REPORT=file, appended to that file as one JSON line.
type chaosReport struct {
	Test          string  `json:"test"`
	Seconds       float64 `json:"seconds"`
	Workers       int     `json:"workers"`
	TTLMillis     int64   `json:"ttl_ms"`
	Pauses        int     `json:"pauses"`
	PausedSeconds float64 `json:"paused_seconds"`
	Restarts      int     `json:"restarts"`
	Grants        int     `json:"grants"`
	Writes        int     `json:"writes"`
	Acked         int     `json:"acked"`
	Rejected      int     `json:"rejected"`
	Unknown       int     `json:"unknown"`
	AfterRestarts int     `json:"grants_judged_after_restarts"`
	LostUpdates   int     `json:"lost_updates"`
	Violations    int     `json:"violations"`
}

func (r *chaosRun) report(h history) {
	rep := chaosReport{
		Test: r.t.Name(), Seconds: r.elapsed.Seconds(), Workers: r.plan.workers, TTLMillis: chaosTTL.Milliseconds(),
		Pauses: r.pauses, PausedSeconds: r.paused.Seconds(), Restarts: len(r.marks),
		Grants: len(h.grants), Writes: len(h.writes), Acked: h.count(outcomeAck),
		Rejected: h.count(outcomeRejected), Unknown: h.count(outcomeUnknown),
		LostUpdates: len(h.lostUpdates()), Violations: len(h.violations()),
	}
	_, rep.AfterRestarts = h.judgeRestarts()
	b, _ := json.Marshal(rep)
	r.t.Logf("chaos numbers: %s", b)
	if path := os.Getenv("PICKET_CHAOS_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			r.t.Errorf("PICKET_CHAOS_REPORT: %v", err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s\n", b)
	}
}
