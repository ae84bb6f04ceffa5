package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// maxBenchDuration bounds -d: every step of a sweep runs that long.
const maxBenchDuration = 10 * time.Minute

// runBench measures grant throughput (see internal/bench): a sweep of
// client counts over the chosen workloads, progress on stderr, a table (or
// JSON rows) on stdout, optionally an SVG chart.
//
// Without -server the store is a SQLite file created for the run and
// deleted after it (at -db, or in a temporary directory), so that the bench
// never writes to a picket.db it was not pointed at; an existing -db file
// only with -force, and then every lease the run took is released.
func runBench(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "bench")
	var sf storeFlags
	sf.register(fs)
	// Not picket.db: a bench never writes to a store it was not pointed at.
	setFlagHelp(fs, "db", "", "embedded mode: the SQLite `file` (default: a temporary file; an existing file only with -force)")
	force := fs.Bool("force", false, "run on an existing -db file: its token counter moves on for good; the run's leases are released after each step")
	clientsFlag := fs.String("c", "1,4,16,64,256", "the client counts of the sweep, comma-separated")
	d := fs.Duration("d", bench.DefaultDuration, "how long each step runs")
	names := fs.String("names", "all", "the workloads, comma-separated: distinct (acquire+release, each client its own name), fresh (new names, never released), hot (one name, hand-over), or all")
	asJSON := fs.Bool("json", false, "print one JSON object per row instead of the table")
	chart := fs.String("chart", "", "write an SVG chart of grants/s against clients to `file`")
	procs := fs.String("procs", "", "instead: many processes on one file, for each `N` of a comma list: N processes taking turns on one name against N goroutines of one process, and the CPU of N idle waiting processes (embedded only)")
	hold := fs.Duration("hold", 2*time.Millisecond, "with -procs: how long each grant is held")
	historyCost := fs.Int("history-cost", 0, "instead: the grant history's cost, `R` rounds alternating two temporary files, history off and on (embedded only)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *historyCost != 0 {
		clients, err := parseClients(*clientsFlag)
		if err != nil {
			return err
		}
		workloads, err := parseWorkloads(*names)
		if err != nil {
			return err
		}
		if flagSource(fs, "server") != "" || flagSource(fs, "db") != "" || sf.etcd.set() || *procs != "" || *historyCost < 1 || *historyCost > 100 || *d <= 0 || *d > maxBenchDuration {
			return usagef("bench: -history-cost R (1 to 100 rounds) measures two temporary files: it excludes -server, -db, -etcd and -procs")
		}
		return runBenchHistory(ctx, e, *historyCost, clients, workloads, *d)
	}
	if *procs != "" {
		counts, err := parseClients(*procs)
		if err != nil {
			return err
		}
		kind, err := sf.resolve(fs)
		if err != nil {
			return err
		}
		if kind != storeEmbedded {
			return usagef("bench: -procs measures an embedded file: it excludes -server and -etcd")
		}
		if *d <= 0 || *d > maxBenchDuration || *hold < 0 || *hold > time.Second {
			return usagef("bench: -d %v or -hold %v is out of bounds", *d, *hold)
		}
		return runBenchProcs(ctx, e, benchDB(fs, &sf), counts, *d, *hold)
	}
	clients, err := parseClients(*clientsFlag)
	if err != nil {
		return err
	}
	if *d <= 0 || *d > maxBenchDuration {
		return usagef("bench: -d %v is out of bounds (0, %v]", *d, maxBenchDuration)
	}
	workloads, err := parseWorkloads(*names)
	if err != nil {
		return err
	}
	kind, err := sf.resolve(fs) // as for every command: the command line wins
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, where, storeName, closeStore, err := openBenchStore(e, kind, benchDB(fs, &sf), &sf, *force, slices.Max(clients))
	if err != nil {
		return err
	}
	defer closeStore()

	steps := len(workloads) * len(clients)
	fmt.Fprintf(e.stderr, "picket bench: %s; %d steps of %v (about %v)\n", where, steps, *d, time.Duration(steps)*(*d))
	rows, runErr := bench.Run(ctx, bench.Config{
		Store:     store,
		Clients:   clients,
		Workloads: workloads,
		Duration:  *d,
		// A server or an existing file (-force) is someone's store: leave
		// no lease on it. A temporary file is deleted anyway.
		Cleanup: kind != storeEmbedded || *force,
		Progress: func(p bench.Progress) {
			if p.Row != nil {
				fmt.Fprintf(e.stderr, "[%7.1fs] %d/%d %s\n", p.Elapsed.Seconds(), p.Step, p.Steps, progressLine(*p.Row))
			}
		},
	})
	if err := printRows(e.stdout, rows, *asJSON, benchSettings{Store: storeName, Where: where, DurationMS: d.Milliseconds(), TTLMS: bench.DefaultTTL.Milliseconds()}); err != nil {
		return err
	}
	if *chart != "" && len(rows) > 0 {
		if err := writeChartFile(*chart, "picket bench: grants/s, "+storeName, rows); err != nil {
			return err
		}
	}
	return runErr
}

// parseWorkloads reads -names: workloads, comma-separated, or "all".
func parseWorkloads(s string) ([]string, error) {
	if s == "all" {
		return slices.Clone(bench.DefaultWorkloads()), nil
	}
	if s == "both" {
		return nil, usagef("bench: -names both was ambiguous and is gone: say all (every workload) or a list such as distinct,hot")
	}
	var out []string
	for w := range strings.SplitSeq(s, ",") {
		w = strings.TrimSpace(w)
		if !slices.Contains(bench.DefaultWorkloads(), w) {
			return nil, usagef("bench: -names %q: %q is not a workload (want distinct, fresh, hot, a comma list of them, or all)", s, w)
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}

// parseClients reads -c: client counts, comma-separated.
func parseClients(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > bench.MaxClients {
			return nil, usagef("bench: -c %q: %q is not a client count in [1, %d]", s, f, bench.MaxClients)
		}
		out = append(out, n)
	}
	return out, nil
}

// openBenchStore opens the store under test and says what it is, at length
// (where) and in short (name). The returned function closes it and deletes
// a file created for the run.
//
// An existing -db file is refused without force: the run would grant
// thousands of tokens on it, and a token counter never goes back.
func openBenchStore(e *env, kind storeKind, db string, sf *storeFlags, force bool, maxClients int) (s lease.Store, where, name string, closeStore func(), err error) {
	if kind == storeEtcd {
		st, err := sf.etcd.open()
		if err != nil {
			return nil, "", "", nil, err
		}
		return st, "etcd " + sf.etcd.endpoints + " prefix " + sf.etcd.prefix, "etcd", func() { st.Close() }, nil
	}
	if kind == storeRemote {
		server, tlsF := sf.server, &sf.tls
		var opts []httpapi.Option
		if sf.authFile != "" {
			tok, err := readAuthToken(sf.authFile)
			if err != nil {
				return nil, "", "", nil, err
			}
			opts = append(opts, httpapi.WithAuthToken(tok))
		}
		// One kept-alive connection per client: the default pool keeps two,
		// and opening a connection per request would measure TCP, not picket.
		tr := &http.Transport{MaxIdleConns: maxClients, MaxIdleConnsPerHost: maxClients, IdleConnTimeout: time.Minute}
		url := tlsF.serverURL(server)
		hc, err := tlsF.httpClient(url) // the CA and client certificate of an https:// server
		if err != nil {
			return nil, "", "", nil, err
		}
		if hc != nil {
			tr.TLSClientConfig = hc.Transport.(*http.Transport).TLSClientConfig
		}
		opts = append(opts, httpapi.WithHTTPClient(&http.Client{Transport: tr}))
		c, err := httpapi.NewClient(url, opts...)
		if err != nil {
			return nil, "", "", nil, usagef("bench: -server: %v", err)
		}
		return c, "server " + server, "over HTTP", tr.CloseIdleConnections, nil
	}
	path, temporary := db, false
	switch _, err := os.Stat(db); {
	case db == "":
		dir, err := os.MkdirTemp("", "picket-bench-")
		if err != nil {
			return nil, "", "", nil, err
		}
		path, temporary = filepath.Join(dir, "bench.db"), true
	case errors.Is(err, fs.ErrNotExist):
		temporary = true
	case err != nil:
		return nil, "", "", nil, err
	case !force:
		return nil, "", "", nil, usagef("bench: -db %s exists: a run grants thousands of tokens on it, and its token counter "+
			"never goes back; name a new file (deleted after the run), leave -db out for a temporary one, "+
			"or give -force to run on this store (its leases are released after each step)", db)
	}
	remove := func() {
		if !temporary {
			return
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-reserve"} {
			os.Remove(path + suffix)
		}
		if db == "" {
			os.Remove(filepath.Dir(path))
		}
	}
	st, err := sqlite.Open(path, overlayOption(sf.allowOverlay)...)
	if err != nil {
		remove()
		return nil, "", "", nil, err
	}
	where = "file " + path
	if temporary {
		where += " (temporary, deleted after the run)"
	}
	return st, where, "embedded SQLite file", func() {
		if err := st.Close(); err != nil {
			fmt.Fprintf(e.stderr, "picket bench: %v\n", err)
		}
		remove()
	}, nil
}

// benchDB is the -db file of a bench: "" (a temporary file) unless -db was
// given, on the command line or in the environment.
func benchDB(fs *flag.FlagSet, sf *storeFlags) string {
	if flagSource(fs, "db") == "" {
		return ""
	}
	return sf.db
}

// setFlagHelp changes the default and the help of a flag that a command
// registers with the shared store flags but reads its own way.
func setFlagHelp(fs *flag.FlagSet, name, def, usage string) {
	f := fs.Lookup(name)
	f.DefValue, f.Usage = def, usage
	f.Value.Set(def)
}

func progressLine(r bench.Row) string {
	s := fmt.Sprintf("%-8s %4d clients: %9.0f grants/s", r.Names, r.Clients, r.GrantsPerSec)
	if r.Names != bench.Fresh {
		s += fmt.Sprintf(" %9.0f cycles/s", r.CyclesPerSec)
	}
	s += fmt.Sprintf("  p50 %s  p99 %s", msString(r.P50), msString(r.P99))
	if r.Errors > 0 {
		s += fmt.Sprintf("  %d errors (first: %v)", r.Errors, r.FirstError)
	}
	return s
}

// benchSettings say what a run measured; every -json row carries them, so a
// row read on its own says which store and which settings made it.
type benchSettings struct {
	Store      string // "embedded SQLite file", "over HTTP", ...
	Where      string // the file or the server
	DurationMS int64  // of each step
	TTLMS      int64  // of the leases taken
}

// printRows prints the table, or one JSON object per row: the row's fields
// and the run's settings.
func printRows(w io.Writer, rows []bench.Row, asJSON bool, set benchSettings) error {
	if asJSON {
		for _, r := range rows {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			row := map[string]any{}
			if err := json.Unmarshal(b, &row); err != nil {
				return err
			}
			row["store"], row["where"], row["duration_ms"], row["ttl_ms"] = set.Store, set.Where, set.DurationMS, set.TTLMS
			if err := printJSON(w, row); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tnames\tgrants/s\tcycles/s\tp50\tp99\tmin share\terrors\t")
	for _, r := range rows {
		cycles := "-"
		if r.Names != bench.Fresh {
			cycles = fmt.Sprintf("%.0f", r.CyclesPerSec)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%.2f\t%d\t\n",
			r.Clients, r.Names, r.GrantsPerSec, cycles, msString(r.P50), msString(r.P99), r.MinShare, r.Errors)
	}
	return tw.Flush()
}

func msString(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fms", ms)
}

func writeChartFile(path, title string, rows []bench.Row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := bench.WriteChart(f, title, rows); err != nil {
		f.Close()
		return fmt.Errorf("chart: %w", err)
	}
	return f.Close()
}
