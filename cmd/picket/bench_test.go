package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// benchRow is what "picket bench -json" promises per row.
type benchRow struct {
	Clients      int      `json:"clients"`
	Names        string   `json:"names"`
	GrantsPerSec *float64 `json:"grants_per_sec"`
	CyclesPerSec *float64 `json:"cycles_per_sec"`
	P50          *float64 `json:"p50_ms"`
	P99          *float64 `json:"p99_ms"`
	Errors       *int64   `json:"errors"`
	Store        string   `json:"store"`
	DurationMS   int64    `json:"duration_ms"`
	TTLMS        int64    `json:"ttl_ms"`
}

func decodeBenchRows(t *testing.T, r result) []benchRow {
	t.Helper()
	var rows []benchRow
	for line := range strings.Lines(r.stdout) {
		var row benchRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("bench -json line %q: %v\nstderr:\n%s", line, err, r.stderr)
		}
		if row.GrantsPerSec == nil || row.CyclesPerSec == nil || row.P50 == nil || row.P99 == nil || row.Errors == nil ||
			row.Store == "" || row.DurationMS <= 0 || row.TTLMS <= 0 {
			t.Fatalf("bench -json line %q lacks a field", line)
		}
		rows = append(rows, row)
	}
	return rows
}

func checkBenchRows(t *testing.T, rows []benchRow, wantSteps []string) {
	t.Helper()
	var steps []string
	for _, r := range rows {
		steps = append(steps, r.Names+" "+strconv.Itoa(r.Clients))
		if *r.Errors != 0 || *r.GrantsPerSec <= 0 || *r.P50 <= 0 || *r.P99 < *r.P50 {
			t.Errorf("row %s/%d: %d errors, %v grants/s, p50 %v ms, p99 %v ms", r.Names, r.Clients, *r.Errors, *r.GrantsPerSec, *r.P50, *r.P99)
		}
		if r.Names == "fresh" && *r.CyclesPerSec != 0 || r.Names != "fresh" && *r.CyclesPerSec <= 0 {
			t.Errorf("row %s/%d: %v cycles/s", r.Names, r.Clients, *r.CyclesPerSec)
		}
	}
	if diff := cmp.Diff(wantSteps, steps); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// svgWellFormed decodes the whole file as XML and returns its root element's
// name.
func svgWellFormed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return root
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
}

func TestBenchEmbedded(t *testing.T) {
	db := tempDB(t) // does not exist: bench creates it for the run and deletes it
	svg := filepath.Join(t.TempDir(), "chart.svg")
	r := runPicket(t, "bench", "-db", db, "-d", "200ms", "-c", "1,2", "-json", "-chart", svg)
	if r.code != exitOK {
		t.Fatalf("picket bench: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	checkBenchRows(t, decodeBenchRows(t, r),
		[]string{"distinct 1", "distinct 2", "fresh 1", "fresh 2", "hot 1", "hot 2"})
	if root := svgWellFormed(t, svg); root != "svg" {
		t.Errorf("chart root element %q, want svg", root)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(db + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind after the run (%v)", db+suffix, err)
		}
	}
	// A progress line per step, each with the elapsed time.
	if n := strings.Count(r.stderr, "s] "); n != 6 {
		t.Errorf("%d progress lines, want 6:\n%s", n, r.stderr)
	}
}

// An existing file is refused without -force, and nothing in it changes;
// with -force the run takes its leases there and releases every one: the
// file keeps its own lease and gains none.
func TestBenchExistingFile(t *testing.T) {
	db := tempDB(t)
	if r := runPicket(t, "acquire", "-db", db, "-name", "mine", "-ttl", "1h"); r.code != exitOK {
		t.Fatalf("acquire: exit %d: %s", r.code, r.stderr)
	}
	r := runPicket(t, "bench", "-db", db, "-d", "50ms", "-c", "1", "-names", "fresh")
	if r.code != exitUsage || !strings.Contains(r.stderr, "-force") || !strings.Contains(r.stderr, db+" exists") {
		t.Errorf("bench -db on an existing file: exit %d, stderr %q; want %d and a word on -force", r.code, r.stderr, exitUsage)
	}
	// Nothing changed: the next grant on the file takes the next token.
	if r := runPicket(t, "acquire", "-db", db, "-name", "probe", "-ttl", "1h"); r.code != exitOK || !strings.Contains(r.stdout, `"token":2,`) {
		t.Errorf("acquire after the refused bench: exit %d, stdout %q, stderr %q; want token 2", r.code, r.stdout, r.stderr)
	}

	// fresh is the workload that leaves its grants held (the others release
	// each one): the run must release them all.
	r = runPicket(t, "bench", "-db", db, "-force", "-d", "200ms", "-c", "1,2", "-names", "fresh")
	if r.code != exitOK {
		t.Fatalf("picket bench -force: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// The table: a header and a row per step.
	lines := slices.Collect(strings.Lines(r.stdout))
	if len(lines) != 3 || !strings.Contains(lines[0], "grants/s") || !strings.Contains(lines[1], "fresh") {
		t.Errorf("table:\n%s", r.stdout)
	}
	ls := runPicket(t, "ls", "-db", db)
	if ls.code != exitOK {
		t.Fatalf("ls after the bench: exit %d: %s", ls.code, ls.stderr)
	}
	if got := slices.Collect(strings.Lines(ls.stdout)); len(got) != 3 || !strings.Contains(ls.stdout, "mine") || !strings.Contains(ls.stdout, "probe") {
		t.Errorf("ls after bench -force:\n%s\nwant the header, mine and probe only", ls.stdout)
	}
}

// Without -db, bench never touches ./picket.db.
func TestBenchDefaultFile(t *testing.T) {
	dir := t.TempDir()
	cmd := picket(t, "bench", "-d", "50ms", "-c", "1", "-names", "distinct")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r := waitPicket(t, cmd, &out, &errb, time.Minute); r.code != exitOK {
		t.Fatalf("picket bench: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("bench without -db wrote into the working directory: %v", entries)
	}
}

func TestBenchServer(t *testing.T) {
	srv := startServer(t, tempDB(t))
	r := runPicket(t, "bench", "-server", srv.url, "-d", "200ms", "-c", "2", "-json")
	if r.code != exitOK {
		t.Fatalf("picket bench: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	rows := decodeBenchRows(t, r)
	checkBenchRows(t, rows, []string{"distinct 2", "fresh 2", "hot 2"})
	if rows[0].Store != "over HTTP" || rows[0].DurationMS != 200 {
		t.Errorf("row settings: store %q, duration %d ms; want over HTTP, 200", rows[0].Store, rows[0].DurationMS)
	}
	// A server is shared: the bench removed every lease it created.
	if ls := runPicket(t, "ls", "-server", srv.url, "-prefix", "picket-bench/"); ls.code != exitOK || strings.Count(ls.stdout, "\n") != 1 {
		t.Errorf("after bench -server, ls shows (exit %d):\n%s", ls.code, ls.stdout)
	}
}

// TestBenchWorkloads: -names takes a comma list of workloads or all; the
// old, ambiguous "both" is a usage error that says what to write instead.
func TestBenchWorkloads(t *testing.T) {
	db := tempDB(t)
	r := runPicket(t, "bench", "-db", db, "-d", "500ms", "-c", "1", "-names", "fresh,hot", "-json")
	if r.code != exitOK {
		t.Fatalf("bench -names fresh,hot: exit %d: %s", r.code, r.stderr)
	}
	checkBenchRows(t, decodeBenchRows(t, r), []string{"fresh 1", "hot 1"})
	if r := runPicket(t, "bench", "-db", db, "-d", "50ms", "-c", "1", "-names", "both"); r.code != exitUsage || !strings.Contains(r.stderr, "all") {
		t.Errorf("bench -names both: exit %d, stderr %q; want a usage error pointing to all", r.code, r.stderr)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bad names", []string{"-names", "warm"}},
		{"bad clients", []string{"-c", "1,x"}},
		{"zero clients", []string{"-c", "0"}},
		{"zero duration", []string{"-d", "0s"}},
		{"db and server", []string{"-db", "x.db", "-server", "http://127.0.0.1:1"}},
		{"auth without server", []string{"-auth-token-file", "tok"}},
		{"db and etcd", []string{"-db", "x.db", "-etcd", "127.0.0.1:1"}},
		{"history cost on etcd", []string{"-history-cost", "1", "-etcd", "127.0.0.1:1"}},
		{"argument", []string{"extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := picket(t, append([]string{"bench"}, tc.args...)...)
			cmd.Dir = dir
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if r := waitPicket(t, cmd, &out, &errb, time.Minute); r.code != exitUsage {
				t.Errorf("picket bench %v: exit %d, want %d; stderr:\n%s", tc.args, r.code, exitUsage, r.stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused bench wrote files: %v", entries)
			}
		})
	}
}

// TestBenchProcs: picket bench -procs runs N picket processes on one file
// against N goroutines, and N idle waiters, and prints a row per N with
// grants in both, each process served and the CPU time per grant of both;
// bad values are usage errors.
func TestBenchProcs(t *testing.T) {
	db := tempDB(t)
	r := runPicket(t, "bench", "-db", db, "-procs", "1,3", "-d", "300ms")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, n := range []string{"1", "3"} {
		var row []string
		for _, l := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(l); len(f) == 8 && f[0] == n {
				row = f
			}
		}
		if row == nil {
			t.Fatalf("no row for %s processes in:\n%s", n, r.stdout)
		}
		if row[1] == "0" || row[2] == "0" || strings.HasPrefix(row[4], "0.00-") || row[5] == "0" || row[6] == "0" {
			t.Errorf("row %v: a column without grants, a process without a share, or no CPU time counted", row)
		}
	}
	for _, args := range [][]string{{"-procs", "0"}, {"-procs", "2", "-server", "http://127.0.0.1:1"}, {"-procs", "2", "-hold", "-1s"}} {
		if r := runPicket(t, append([]string{"bench"}, args...)...); r.code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d (usage)", args, r.code, exitUsage)
		}
	}
}
