package peers_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/benchmarks/peers"
	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// TestRunEmbeddedAndTrivial runs the suite briefly (25 operations a step)
// against what needs no server: the fsync floor, picket embedded and the
// trivial HTTP handler. Every step gives a row with work done and no
// errors, progress names every target, and the table and the chart render.
func TestRunEmbeddedAndTrivial(t *testing.T) {
	srv := httptest.NewServer(peers.TrivialHandler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	var progress bytes.Buffer
	results, err := peers.Run(context.Background(), peers.Config{
		Targets: []peers.Target{peers.FsyncFloor(dir), peers.PicketEmbedded(dir), peers.TrivialTarget(srv.URL, os.Getpid())},
		Clients: []int{1, 4},
		// Steps end after a few operations; the time bound only matters on
		// a machine too loaded to do them in it (no step may end empty).
		MaxOps:   25,
		Duration: 3 * time.Second,
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}

	type step struct {
		Target, Names string
		Clients       int
	}
	var got []step
	for _, r := range results {
		got = append(got, step{r.Target, r.Names, r.Clients})
		if r.Err != nil || r.Errors != 0 || r.Grants == 0 {
			t.Errorf("%s %s %d clients: err %v, %d errors (first: %v), %d grants", r.Target, r.Names, r.Clients, r.Err, r.Errors, r.FirstError, r.Grants)
		}
		if rate, _ := peers.Rate(r); rate <= 0 {
			t.Errorf("%s %s %d clients: rate %v", r.Target, r.Names, r.Clients, rate)
		}
	}
	want := []step{{"fsync-floor", "fsync", 1}}
	for _, w := range []string{bench.Distinct, bench.Fresh, bench.Hot} {
		for _, c := range []int{1, 4} {
			want = append(want, step{"picket-embedded", w, c})
		}
	}
	for _, w := range []string{bench.Distinct, bench.Fresh} { // the trivial handler has no hot name
		for _, c := range []int{1, 4} {
			want = append(want, step{"trivial-http", w, c})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for _, name := range []string{"fsync-floor", "picket-embedded", "trivial-http"} {
		if !strings.Contains(progress.String(), name) {
			t.Errorf("progress never names %s:\n%s", name, progress.String())
		}
	}

	var md bytes.Buffer
	if err := peers.WriteMarkdown(&md, results); err != nil {
		t.Fatal(err)
	}
	checkTable(t, md.String(), len(want))
	var svg bytes.Buffer
	if err := peers.WriteChart(&svg, "test", results); err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg.Bytes())
}

// TestMarkdownDurability: every row states its durability, and a row that
// is not durable says so in bold; a target that failed has a row too.
func TestMarkdownDurability(t *testing.T) {
	row := bench.Row{Names: bench.Distinct, Clients: 1, Grants: 10, Cycles: 10, CyclesPerSec: 100}
	results := []peers.Result{
		{Target: "a", Durability: "durable: long", Short: "durable: x", Durable: true, Row: row},
		{Target: "b", Durability: "NOT durable: long", Short: "NOT durable: y", Row: row},
		{Target: "c", Durability: "durable: long", Short: "durable: z", Durable: true, Err: errors.New("connection refused")},
	}
	var md bytes.Buffer
	if err := peers.WriteMarkdown(&md, results); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	checkTable(t, out, 3)
	for _, want := range []string{"| a | durable: x |", "| b | **NOT durable: y** |", "| c | durable: z | — | — | **failed**: connection refused", "- **b**: NOT durable: long."} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// checkTable checks that the markdown has n rows and that each names its
// durability.
func checkTable(t *testing.T, md string, n int) {
	t.Helper()
	rows := 0
	for line := range strings.SplitSeq(md, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| system ") {
			continue
		}
		rows++
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.Contains(strings.ToLower(cells[1]), "durable") && !strings.Contains(cells[1], "baseline") {
			t.Errorf("row without its durability: %s", line)
		}
	}
	if rows != n {
		t.Errorf("%d table rows, want %d:\n%s", rows, n, md)
	}
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, b)
		}
	}
}

// TestAdapters checks each adapter against the lease semantics the
// workloads rely on: a held name is refused, a stranger cannot release it,
// a release frees it, tokens grow, and a waiter gets the name when it is
// released. picket embedded always runs (it is the reference); the peers run
// when their servers are given (PICKET_PEERS_REDIS=host:port,
// PICKET_PEERS_ETCD=URL[,URL...], PICKET_TEST_POSTGRES=DSN as .ci/postgres
// exports it) and fail instead of skipping with PICKET_REQUIRE_PEERS=1.
func TestAdapters(t *testing.T) {
	cases := []struct {
		name string
		env  string
		make func(v string) peers.Target
	}{
		{"picket-embedded", "", func(string) peers.Target { return peers.PicketEmbedded(t.TempDir()) }},
		{"redis", "PICKET_PEERS_REDIS", func(v string) peers.Target { return peers.RedisTarget(v, "everysec") }},
		{"etcd", "PICKET_PEERS_ETCD", func(v string) peers.Target { return peers.EtcdTarget("etcd", peers.SplitEndpoints(v)) }},
		// .ci/postgres runs with fsync off: only the not-durable target
		// accepts such a server.
		{"postgres", "PICKET_TEST_POSTGRES", func(v string) peers.Target { return peers.PostgresTarget(v, false) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := ""
			if tc.env != "" {
				if v = os.Getenv(tc.env); v == "" {
					if os.Getenv("PICKET_REQUIRE_PEERS") == "1" {
						t.Fatalf("%s is not set and PICKET_REQUIRE_PEERS=1", tc.env)
					}
					t.Skipf("%s is not set", tc.env)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			store, _, closeStore, err := tc.make(v).Open(ctx, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer closeStore()
			if err := checkSemantics(ctx, store); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAdaptersControl: the semantics check catches a store that grants a
// held name (the control for TestAdapters).
func TestAdaptersControl(t *testing.T) {
	err := checkSemantics(context.Background(), new(grantsAll))
	if err == nil {
		t.Fatal("the check passed a store that grants every acquire")
	}
	t.Logf("caught: %v", err)
}

// grantsAll is broken on purpose: every acquire is granted.
type grantsAll struct{ n atomic.Int64 }

func (s *grantsAll) Acquire(_ context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	return lease.Grant{Name: req.Name, Holder: req.Holder, Token: token.Token(s.n.Add(1)), TTL: req.TTL}, nil
}
func (s *grantsAll) Release(context.Context, lease.ReleaseRequest) error { return nil }
func (s *grantsAll) Renew(context.Context, lease.RenewRequest) (lease.Grant, error) {
	return lease.Grant{}, nil
}
func (s *grantsAll) Get(context.Context, string) (lease.Info, error) { return lease.Info{}, nil }
func (s *grantsAll) List(context.Context, lease.ListRequest) (lease.ListPage, error) {
	return lease.ListPage{}, nil
}

// checkSemantics runs the lease behaviour the workloads depend on against
// s, on names of its own, and says what went wrong first.
func checkSemantics(ctx context.Context, s lease.Store) error {
	base := "peers-test/" + lease.NewHolder()[:8] + "/"
	a, b := lease.NewHolder(), lease.NewHolder()
	req := func(name, holder string, wait time.Duration) lease.AcquireRequest {
		return lease.AcquireRequest{Name: base + name, Holder: holder, TTL: 30 * time.Second, Wait: wait}
	}
	g1, err := s.Acquire(ctx, req("x", a, 0))
	if err != nil {
		return fmt.Errorf("A's acquire of a free name: %w", err)
	}
	if _, err := s.Acquire(ctx, req("x", b, 0)); !errors.Is(err, lease.ErrHeld) {
		return fmt.Errorf("B's acquire of A's name: %v, want ErrHeld", err)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: base + "x", Holder: b, Token: g1.Token}); !errors.Is(err, lease.ErrLost) {
		return fmt.Errorf("B's release of A's name: %v, want ErrLost", err)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: base + "x", Holder: a, Token: g1.Token}); err != nil {
		return fmt.Errorf("A's release: %w", err)
	}
	g2, err := s.Acquire(ctx, req("x", b, 0))
	if err != nil {
		return fmt.Errorf("B's acquire after A's release: %w", err)
	}
	if g2.Token <= g1.Token {
		return fmt.Errorf("token %d after %d: tokens must grow", g2.Token, g1.Token)
	}

	// A waiter gets the name once it is released, with a greater token.
	type result struct {
		g   lease.Grant
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := s.Acquire(ctx, req("x", a, 10*time.Second))
		done <- result{g, err}
	}()
	select {
	case r := <-done:
		return fmt.Errorf("A's waiting acquire returned while B held the name: %v, %v", r.g, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: base + "x", Holder: b, Token: g2.Token}); err != nil {
		return fmt.Errorf("B's release: %w", err)
	}
	r := <-done
	if r.err != nil {
		return fmt.Errorf("A's waiting acquire: %w", r.err)
	}
	if r.g.Token <= g2.Token {
		return fmt.Errorf("waiter's token %d after %d: tokens must grow", r.g.Token, g2.Token)
	}
	return s.Release(ctx, lease.ReleaseRequest{Name: base + "x", Holder: a, Token: r.g.Token})
}

// TestSummary: the side-by-side table has one line per system at the
// largest client count, and the ratios come from the rows they name; a
// ratio whose rows are missing is left out rather than made up.
func TestSummary(t *testing.T) {
	row := func(names string, clients int, rate float64) bench.Row {
		r := bench.Row{Names: names, Clients: clients, Elapsed: time.Second, P50: 250 * time.Microsecond}
		switch names {
		case bench.Distinct:
			r.Cycles, r.Grants, r.CyclesPerSec = int64(rate), int64(rate), rate
		default:
			r.Grants, r.GrantsPerSec = int64(rate), rate
		}
		return r
	}
	results := []peers.Result{
		{Target: "picket-http", Durable: true, Short: "durable", Row: row(bench.Distinct, 1, 500)},
		{Target: "picket-http", Durable: true, Short: "durable", Row: row(bench.Distinct, 64, 6000), ServerCPU: 80 * time.Microsecond},
		{Target: "trivial-http", Baseline: true, Short: "baseline", Row: row(bench.Distinct, 64, 10000)},
		{Target: "picket-embedded", Durable: true, Short: "durable", Row: row(bench.Fresh, 64, 30000)},
		{Target: "redis-always", Durable: true, Short: "durable", Row: row(bench.Fresh, 64, 20000)},
	}
	var md bytes.Buffer
	if err := peers.WriteSummary(&md, results); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| 64 clients |",
		"| picket-http | durable | 6,000 | — | — | 80.0 | 0.250 |",
		"| redis-always | durable | — | 20,000 | — |  | — |",
		"picket over HTTP / the trivial handler, requests/s at 64 clients (distinct): 12,000 / 20,000 = **0.60×**",
		"picket embedded / Redis appendfsync always, fresh grants/s at 64 clients: 30,000 / 20,000 = **1.50×**",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "etcd") {
		t.Errorf("summary has an etcd ratio without etcd rows:\n%s", out)
	}

	// picket on etcd against the Mutex: distinct and hot, at every count
	// above one that has both rows.
	results = append(results,
		peers.Result{Target: "etcd-1", Durable: true, Short: "durable", Row: row(bench.Hot, 16, 200)},
		peers.Result{Target: "picket-on-etcd-1", Durable: true, Short: "durable", Row: row(bench.Hot, 16, 180)},
		peers.Result{Target: "etcd-1", Durable: true, Short: "durable", Row: row(bench.Distinct, 64, 4000)},
		peers.Result{Target: "picket-on-etcd-1", Durable: true, Short: "durable", Row: row(bench.Distinct, 64, 3800)},
		peers.Result{Target: "picket-on-etcd-1", Durable: true, Short: "durable", Row: row(bench.Distinct, 1, 500)},
	)
	md.Reset()
	if err := peers.WriteSummary(&md, results); err != nil {
		t.Fatal(err)
	}
	out = md.String()
	for _, want := range []string{
		"picket on etcd-1 / etcd's own Mutex, cycles/s at 64 clients: 3,800 / 4,000 = **0.95×**",
		"picket on etcd-1 / etcd's own Mutex, hot hand-overs/s at 16 clients: 180 / 200 = **0.90×**",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "at 1 clients") {
		t.Errorf("summary compares one client's rows:\n%s", out)
	}
}

// TestRunRounds: with Rounds, the suite runs the targets forwards, then
// backwards, then forwards (A B C, C B A, A B C), and reports each step
// once: the round with the median rate, with the lowest and highest. A
// target that failed in one round keeps its failure row; the table shows
// the spread.
func TestRunRounds(t *testing.T) {
	var calls []string
	rates := map[string][]float64{"a": {10, 30, 20}, "b": {5, 6, 7}}
	measure := func(name string) func(context.Context, time.Duration, int64) (bench.Row, error) {
		return func(context.Context, time.Duration, int64) (bench.Row, error) {
			calls = append(calls, name)
			if name == "c" {
				if len(calls) == 4 { // its second round
					return bench.Row{}, errors.New("c broke")
				}
				return bench.Row{Names: "fsync", Clients: 1, Grants: 1, GrantsPerSec: 1, Elapsed: time.Second}, nil
			}
			r := rates[name][0]
			rates[name] = rates[name][1:]
			return bench.Row{Names: "fsync", Clients: 1, Grants: int64(r), GrantsPerSec: r, Elapsed: time.Second, P50: time.Duration(r) * time.Millisecond}, nil
		}
	}
	var targets []peers.Target
	for _, n := range []string{"a", "b", "c"} {
		targets = append(targets, peers.Target{Name: n, Durability: "test", Baseline: true, Measure: measure(n)})
	}
	var progress bytes.Buffer
	results, err := peers.Run(context.Background(), peers.Config{Targets: targets, Rounds: 3, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "c", "b", "a", "a", "b", "c"}, calls); diff != "" {
		t.Errorf("order of the steps (-want +got):\n%s", diff)
	}
	type got struct {
		Target          string
		Rate, Low, High float64
		P50             time.Duration
		Rounds          int
		Failed          bool
	}
	var rows []got
	for _, r := range results {
		rate, _ := peers.Rate(r)
		rows = append(rows, got{r.Target, rate, r.Low, r.High, r.P50, r.Rounds, r.Err != nil})
	}
	want := []got{
		{"a", 20, 10, 30, 20 * time.Millisecond, 3, false}, // the median round's row, its own p50
		{"b", 6, 5, 7, 6 * time.Millisecond, 3, false},
		{"c", 1, 1, 1, 0, 2, false},
		{"c", 0, 0, 0, 0, 0, true},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(progress.String(), "round 2/3") {
		t.Errorf("progress does not say the round:\n%s", progress.String())
	}
	var md bytes.Buffer
	if err := peers.WriteMarkdown(&md, results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "20 syncs/s (10–30)") || !strings.Contains(md.String(), "the suite ran 3 times") {
		t.Errorf("the table does not show the spread and the rounds:\n%s", md.String())
	}
}
