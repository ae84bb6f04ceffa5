// Command peers runs picket side by side with Redis, etcd and PostgreSQL
// (package peers) and writes a markdown table and an SVG chart.
//
//	peers [-quick] [-out DIR] [-redis ADDR] [-postgres DSN] [-etcd1 URL] [-etcd3 URL,URL,URL]
//	      [-picket-server URL -picket-pid PID] [-trivial URL -trivial-pid PID] [-data DIR] [-only a,b]
//	peers trivial -addr 127.0.0.1:0 -addr-file F   (the trivial HTTP baseline, in a process of its own)
//	peers freeport N                               (N free loopback ports, for run.sh)
//
// Every system is optional: a flag left empty leaves its rows out. run.sh
// starts the servers and passes these flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/picketlock/picket/benchmarks/peers"
	"github.com/picketlock/picket/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "trivial":
			return serveTrivial(ctx, args[1:])
		case "freeport":
			return freePorts(args[1:], stdout)
		}
	}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a smoke run: 1 s steps, 1 and 16 clients")
	out := fs.String("out", "peers-out", "write peers.md, peers.svg and peers.json into this `dir`")
	d := fs.Duration("d", peers.DefaultDuration, "how long each step runs")
	rounds := fs.Int("rounds", 1, "run the suite this many `times`, the targets forwards then backwards, and report each step's median round with the spread")
	clientsFlag := fs.String("c", "1,16,64", "client counts, comma-separated")
	names := fs.String("names", "distinct,fresh,hot", "workloads, comma-separated")
	timeout := fs.Duration("timeout", 30*time.Minute, "bound on the whole run")
	data := fs.String("data", "", "`dir` for the embedded store and the fsync floor (default: a temporary dir); put it on the disk the servers use")
	redisAddr := fs.String("redis", "", "Redis `host:port` (rows: appendfsync always and everysec)")
	pgDSN := fs.String("postgres", "", "PostgreSQL `DSN` (rows: synchronous_commit on and off)")
	etcd1 := fs.String("etcd1", "", "client `URL` of a one-member etcd cluster")
	etcd3 := fs.String("etcd3", "", "client `URLs` of a three-member etcd cluster, comma-separated")
	picketURL := fs.String("picket-server", "", "`URL` of a picket serve process")
	picketPid := fs.Int("picket-pid", 0, "`pid` of that process (server CPU per request)")
	trivialURL := fs.String("trivial", "", "`URL` of a \"peers trivial\" process")
	trivialPid := fs.Int("trivial-pid", 0, "`pid` of that process")
	only := fs.String("only", "", "run only these targets, comma-separated (names as in the table)")
	redisPid := fs.Int("redis-pid", 0, "`pid` of the Redis server (server CPU per request)")
	etcd1Pid := fs.Int("etcd1-pid", 0, "`pid` of the one-member etcd (server CPU per request)")
	command := fs.String("command", "", "the command line to print above the table (run.sh passes its own)")
	noEmbedded := fs.Bool("no-embedded", false, "leave out picket embedded and the fsync floor")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the load generator, and picket embedded) to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see -h)", fs.Args())
	}
	clients, err := parseInts(*clientsFlag)
	if err != nil {
		return fmt.Errorf("-c: %w", err)
	}
	dur := *d
	if *quick {
		// Short steps, and 1 and 16 clients unless -c says otherwise.
		dur = time.Second
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["c"] {
			clients = peers.QuickClients()
		}
	}
	if *rounds < 1 || *rounds > 20 {
		return fmt.Errorf("-rounds: %d is not between 1 and 20", *rounds)
	}
	if dur <= 0 {
		return fmt.Errorf("-d: %v is not a positive duration", dur)
	}
	if *timeout <= 0 {
		return fmt.Errorf("-timeout: %v is not a positive duration", *timeout)
	}
	workloads := strings.Split(*names, ",")
	for _, w := range workloads {
		if !slices.Contains(bench.DefaultWorkloads(), w) {
			return fmt.Errorf("-names: %q is not a workload (distinct, fresh, hot)", w)
		}
	}

	dir := *data
	if dir == "" {
		dir, err = os.MkdirTemp("", "picket-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}

	var targets []peers.Target
	if !*noEmbedded {
		targets = append(targets, peers.FsyncFloor(dir), peers.PicketEmbedded(dir))
	}
	if *picketURL != "" {
		targets = append(targets, peers.PicketHTTP(*picketURL, *picketPid))
	}
	if *trivialURL != "" {
		targets = append(targets, peers.TrivialTarget(*trivialURL, *trivialPid))
	}
	if *redisAddr != "" {
		for _, fsync := range []string{"always", "everysec"} {
			t := peers.RedisTarget(*redisAddr, fsync)
			t.Pid = *redisPid
			targets = append(targets, t)
		}
	}
	if *etcd1 != "" {
		for _, t := range peers.EtcdTargets("etcd-1", peers.SplitEndpoints(*etcd1)) {
			t.Pid = *etcd1Pid
			targets = append(targets, t)
		}
	}
	if *etcd3 != "" {
		targets = append(targets, peers.EtcdTargets("etcd-3", peers.SplitEndpoints(*etcd3))...)
	}
	if *pgDSN != "" {
		targets = append(targets, peers.PostgresTarget(*pgDSN, true), peers.PostgresTarget(*pgDSN, false))
	}
	if *only != "" {
		keep := strings.Split(*only, ",")
		var known []string
		for _, t := range targets {
			known = append(known, t.Name)
		}
		for _, k := range keep {
			if !slices.Contains(known, k) {
				return fmt.Errorf("-only: %q is none of this run's targets (%s)", k, strings.Join(known, ", "))
			}
		}
		targets = slices.DeleteFunc(targets, func(t peers.Target) bool { return !slices.Contains(keep, t.Name) })
	}
	if len(targets) == 0 {
		return errors.New("no targets: give at least one system (see -h)")
	}
	// Every flag is checked: from here on the run writes files.
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	meta := describeMachine(dir)
	meta.Command = *command
	if meta.Command == "" {
		meta.Command = strings.Join(append([]string{"peers"}, args...), " ")
	}
	meta.Quick = *quick
	meta.Start = time.Now().UTC()
	fmt.Fprintf(stderr, "peers: %d targets, clients %v, workloads %v, %v per step, %d round(s); data in %s (%s)\n",
		len(targets), clients, workloads, dur, *rounds, dir, meta.DataFS)
	results, runErr := peers.Run(ctx, peers.Config{
		Targets: targets, Clients: clients, Workloads: workloads, Duration: dur, Rounds: *rounds, Progress: stderr,
	})
	meta.Load1End = loadAvg()
	meta.Took = time.Since(meta.Start).Round(time.Second)
	if err := writeOutputs(*out, meta, results); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "peers: wrote %s\n", filepath.Join(*out, "peers.md"))
	return runErr
}

// machine is what the table's heading says about the run.
type machine struct {
	Command              string
	Quick                bool
	Start                time.Time
	Took                 time.Duration
	CPUs                 int
	CPUModel             string
	Kernel               string
	GoVersion            string
	DataFS               string
	Load1Start, Load1End string
}

func describeMachine(dir string) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Load1Start: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		switch st.Type {
		case 0x01021994:
			m.DataFS = "tmpfs: fsync is free here, durable rows mean nothing"
		case 0xEF53:
			m.DataFS = "ext4"
		case 0x58465342:
			m.DataFS = "xfs"
		case 0x9123683E:
			m.DataFS = "btrfs"
		default:
			m.DataFS = fmt.Sprintf("file system type %#x", st.Type)
		}
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func writeOutputs(dir string, m machine, results []peers.Result) error {
	f, err := os.Create(filepath.Join(dir, "peers.md"))
	if err != nil {
		return err
	}
	if m.Quick {
		fmt.Fprintf(f, "**A -quick smoke run (1 s steps): it checks that the suite works end to end, it is not a measurement.**\n\n")
	}
	fmt.Fprintf(f, "`%s` — %s, %v; %d CPUs (%s), Linux %s, %s; data on %s; load average %s at the start, %s at the end.\n\n",
		m.Command, m.Start.Format("2006-01-02 15:04 UTC"), m.Took, m.CPUs, m.CPUModel, m.Kernel, m.GoVersion, m.DataFS, m.Load1Start, m.Load1End)
	if err := peers.WriteSummary(f, results); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(f, "\nEvery step:\n\n")
	if err := peers.WriteMarkdown(f, results); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	title := "picket and its peers, " + m.Start.Format("2006-01-02")
	if m.Quick {
		title += " (smoke run, not a measurement)"
	}
	f, err = os.Create(filepath.Join(dir, "peers.svg"))
	if err != nil {
		return err
	}
	if err := peers.WriteChart(f, title, results); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	type jsonRow struct {
		Target     string     `json:"target"`
		Durability string     `json:"durability"`
		Durable    bool       `json:"durable"`
		Version    string     `json:"version,omitempty"`
		Row        *bench.Row `json:"row,omitempty"`
		ServerCPU  float64    `json:"server_cpu_us_per_request,omitempty"`
		Err        string     `json:"error,omitempty"`
	}
	var rows []jsonRow
	for _, r := range results {
		j := jsonRow{Target: r.Target, Durability: r.Durability, Durable: r.Durable, Version: r.Version,
			ServerCPU: float64(r.ServerCPU) / float64(time.Microsecond)}
		if r.Err != nil {
			j.Err = r.Err.Error()
		} else {
			row := r.Row
			j.Row = &row
		}
		rows = append(rows, j)
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "peers.json"), append(b, '\n'), 0o644)
}

// serveTrivial serves peers.TrivialHandler until ctx ends, writing the
// address it listens on to -addr-file once it does.
func serveTrivial(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("peers trivial", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen on this `address`")
	addrFile := fs.String("addr-file", "", "write the address to this `file` once listening")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: peers.TrivialHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// freePorts prints n loopback ports that were free a moment ago.
func freePorts(args []string, stdout io.Writer) error {
	n := 1
	if len(args) > 0 {
		var err error
		if n, err = strconv.Atoi(args[0]); err != nil || n < 1 || n > 100 {
			return fmt.Errorf("freeport: %q is not a count in [1, 100]", args[0])
		}
	}
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		lns = append(lns, ln)
		fmt.Fprintln(stdout, ln.Addr().(*net.TCPAddr).Port)
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > bench.MaxClients {
			return nil, fmt.Errorf("%q is not a client count in [1, %d]", f, bench.MaxClients)
		}
		out = append(out, n)
	}
	return out, nil
}
