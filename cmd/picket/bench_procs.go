package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// picket bench -procs: many processes on one file (issue 18). For each N
// of the sweep it measures, on one SQLite file:
//
//   - processes: N picket processes (the hidden subcommand benchProcCommand)
//     each looping acquire (waiting) / hold -hold / release on one name,
//     all started together once every one has opened the file, for -d;
//   - goroutines: the same loop in N goroutines of this process, on one
//     Store: the reference;
//   - idle: N processes each waiting for a name this process holds, and
//     the CPU each uses while it waits (/proc/PID/stat, for -d).
//
// It prints grants/s of both, their ratio, the spread of the per-process
// shares, the CPU time each spends per grant (user + system, all processes
// together; the goroutines' process alone), and the idle waiters' CPU in %
// of a core. On a shared machine the rate moves with the other jobs; the CPU
// per grant much less.

// benchProcCommand is the hidden subcommand of a bench process:
// "picket __bench-proc loop|idle FILE NAME HOLD". It prints "ready" once
// the file is open; a loop process then waits for a line "go D" on stdin,
// runs for D and prints "grants N cpu NS" (its CPU time over the loop, in
// nanoseconds); an idle process waits for the name until stdin closes.
const benchProcCommand = "__bench-proc"

// procsRow is one step of the sweep.
type procsRow struct {
	N                   int
	Procs, Goroutines   float64 // grants/s
	MinShare, MaxShare  float64 // per-process grants over the mean
	ProcsCPU, GorCPU    float64 // CPU time per grant, µs
	IdleCPU             float64 // % of a core, per idle waiting process (mean)
	ProcErrs, IdleProcs int
}

func runBenchProcs(ctx context.Context, e *env, db string, counts []int, d, hold time.Duration) error {
	if db == "" {
		dir, err := os.MkdirTemp("", "picket-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		db = filepath.Join(dir, "picket.db")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	st, err := sqlite.Open(db)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(e.stderr, "picket bench -procs: %s; %d steps of 3 x %v\n", db, len(counts), d)
	var rows []procsRow
	for i, n := range counts {
		name := fmt.Sprintf("bench/procs/%d/%d", os.Getpid(), n)
		r := procsRow{N: n}
		shares, cpu, err := benchProcesses(ctx, self, db, name+"/p", n, d, hold)
		if err != nil {
			return err
		}
		total := 0
		for _, c := range shares {
			total += c
		}
		if total > 0 {
			r.ProcsCPU = float64(cpu.Microseconds()) / float64(total)
		}
		r.Procs = float64(total) / d.Seconds()
		if total > 0 {
			mean := float64(total) / float64(n)
			r.MinShare, r.MaxShare = float64(slices.Min(shares))/mean, float64(slices.Max(shares))/mean
		}
		fmt.Fprintf(e.stderr, "[%d/%d] %d processes: %.0f grants/s\n", i+1, len(counts), n, r.Procs)
		before := selfCPU()
		if r.Goroutines, err = benchGoroutines(ctx, st, name+"/g", n, d, hold); err != nil {
			return err
		}
		if r.Goroutines > 0 {
			r.GorCPU = float64((selfCPU() - before).Microseconds()) / (r.Goroutines * d.Seconds())
		}
		fmt.Fprintf(e.stderr, "[%d/%d] %d goroutines: %.0f grants/s\n", i+1, len(counts), n, r.Goroutines)
		if r.IdleCPU, err = benchIdle(ctx, st, self, db, name+"/idle", n, d); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "[%d/%d] %d idle waiting processes: %.3f %% of a core each\n", i+1, len(counts), n, r.IdleCPU)
		rows = append(rows, r)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "contenders\tprocesses grants/s\tgoroutines grants/s\tratio\tshare min-max\tCPU µs/grant processes\tgoroutines\tidle waiter CPU %%\t\n")
	for _, r := range rows {
		ratio := 0.0
		if r.Goroutines > 0 {
			ratio = r.Procs / r.Goroutines
		}
		fmt.Fprintf(w, "%d\t%.0f\t%.0f\t%.2fx\t%.2f-%.2f\t%.0f\t%.0f\t%.3f\t\n", r.N, r.Procs, r.Goroutines, ratio, r.MinShare, r.MaxShare,
			r.ProcsCPU, r.GorCPU, r.IdleCPU)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "(hold %v, %v per step; share: a process's grants over the mean; CPU µs/grant: user + system time "+
		"of all the loop processes, or of this process, per grant; idle CPU: %% of one core per waiting process)\n", hold, d)
	return err
}

// benchProc is a bench child process.
type benchProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startBenchProc(self, mode, db, name string, hold time.Duration) (*benchProc, error) {
	cmd := exec.Command(self, benchProcCommand, mode, db, name, hold.String())
	cmd.Env = os.Environ()
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &benchProc{cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p, nil
}

// line returns the process's next line, or an error after a minute.
func (p *benchProc) line() (string, error) {
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("bench process %d ended", p.cmd.Process.Pid)
		}
		return l, nil
	case <-time.After(time.Minute):
		return "", fmt.Errorf("bench process %d said nothing for a minute", p.cmd.Process.Pid)
	}
}

func (p *benchProc) stop() {
	p.in.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// startAll starts n bench processes and waits until each has the file open.
func startAll(self, mode, db, name string, n int, hold time.Duration) ([]*benchProc, error) {
	var ps []*benchProc
	for range n {
		p, err := startBenchProc(self, mode, db, name, hold)
		if err != nil {
			stopAll(ps)
			return nil, err
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if l, err := p.line(); err != nil || l != "ready" {
			stopAll(ps)
			return nil, fmt.Errorf("bench process: %q, %v", l, err)
		}
	}
	return ps, nil
}

func stopAll(ps []*benchProc) {
	for _, p := range ps {
		p.stop()
	}
}

// benchProcesses runs n loop processes together for d and returns each
// one's grants and the CPU time they used in all.
func benchProcesses(ctx context.Context, self, db, name string, n int, d, hold time.Duration) ([]int, time.Duration, error) {
	ps, err := startAll(self, "loop", db, name, n, hold)
	if err != nil {
		return nil, 0, err
	}
	defer stopAll(ps)
	for _, p := range ps {
		fmt.Fprintf(p.in, "go %s\n", d)
	}
	counts := make([]int, n)
	var cpu time.Duration
	for i, p := range ps {
		l, err := p.line()
		if err != nil {
			return nil, 0, err
		}
		var ns int64
		if _, err := fmt.Sscanf(l, "grants %d cpu %d", &counts[i], &ns); err != nil {
			return nil, 0, fmt.Errorf("bench process: %q", l)
		}
		cpu += time.Duration(ns)
	}
	return counts, cpu, ctx.Err()
}

// benchGoroutines runs n goroutines of the loop on st for d and returns
// grants/s.
func benchGoroutines(ctx context.Context, st lease.Store, name string, n int, d, hold time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var total int
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			c, err := benchLoop(ctx, st, name, hold)
			mu.Lock()
			total += c
			mu.Unlock()
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	return float64(total) / d.Seconds(), <-errs
}

// benchLoop acquires name (waiting), holds it for hold and releases it,
// until ctx ends, and returns how many grants it had.
func benchLoop(ctx context.Context, st lease.Store, name string, hold time.Duration) (int, error) {
	holder := lease.NewHolder()
	n := 0
	for ctx.Err() == nil {
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, Owner: "bench", TTL: time.Minute, Wait: 10 * time.Second})
		if errors.Is(err, lease.ErrHeld) || ctx.Err() != nil {
			if err == nil {
				_ = st.Release(context.Background(), lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token})
			}
			continue
		}
		if err != nil {
			return n, err
		}
		if hold > 0 {
			time.Sleep(hold)
		}
		if err := st.Release(context.Background(), lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// benchIdle starts n processes that wait for a name held here, and returns
// the CPU each uses over d while it waits, in % of a core (the mean).
func benchIdle(ctx context.Context, st lease.Store, self, db, name string, n int, d time.Duration) (float64, error) {
	holder := lease.NewHolder()
	g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, Owner: "bench", TTL: time.Hour})
	if err != nil {
		return 0, err
	}
	defer st.Release(context.Background(), lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token})
	ps, err := startAll(self, "idle", db, name, n, 0)
	if err != nil {
		return 0, err
	}
	defer stopAll(ps)
	for _, p := range ps {
		if l, err := p.line(); err != nil || l != "waiting" {
			return 0, fmt.Errorf("idle bench process: %q, %v", l, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // their first try has queued them
	before := make([]int64, n)
	for i, p := range ps {
		if before[i], err = cpuTicks(p.cmd.Process.Pid); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var sum int64
	for i, p := range ps {
		after, err := cpuTicks(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += after - before[i]
	}
	const ticksPerSecond = 100 // USER_HZ, fixed by the Linux ABI
	return 100 * float64(sum) / ticksPerSecond / time.Since(start).Seconds() / float64(n), nil
}

// cpuTicks returns the user and system time of process pid, in clock
// ticks (/proc/PID/stat fields 14 and 15).
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + k, errors.Join(err1, err2)
}

// runBenchProc is a bench child process (benchProcCommand).
func runBenchProc(ctx context.Context, e *env, args []string) error {
	if len(args) != 4 {
		return usagef("%s: want loop|idle FILE NAME HOLD", benchProcCommand)
	}
	mode, db, name := args[0], args[1], args[2]
	hold, err := time.ParseDuration(args[3])
	if err != nil {
		return usagef("%s: hold %q: %v", benchProcCommand, args[3], err)
	}
	st, err := sqlite.Open(db)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintln(e.stdout, "ready")
	in := bufio.NewScanner(e.stdin)
	switch mode {
	case "loop":
		if !in.Scan() {
			return nil
		}
		d, err := time.ParseDuration(strings.TrimPrefix(in.Text(), "go "))
		if err != nil {
			return err
		}
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		before := selfCPU()
		n, err := benchLoop(c, st, name, hold)
		fmt.Fprintf(e.stdout, "grants %d cpu %d\n", n, selfCPU()-before)
		return err
	case "idle":
		fmt.Fprintln(e.stdout, "waiting")
		c, cancel := context.WithCancel(ctx)
		go func() {
			for in.Scan() {
			}
			cancel()
		}()
		_, err := st.Acquire(c, lease.AcquireRequest{Name: name, Holder: lease.NewHolder(), Owner: "bench-idle", TTL: time.Minute, Wait: lease.MaxWait})
		if c.Err() != nil {
			return nil
		}
		return err
	}
	return usagef("%s: mode %q", benchProcCommand, mode)
}
