package peers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/internal/bench"
)

// Defaults for the zero fields of a Config.
const (
	DefaultDuration = 3 * time.Second // each step
	DefaultMaxOps   = 2_000_000       // operations started in one step
)

// DefaultClients returns the sweep of client counts; QuickClients that of
// a quick run. Each call returns a new slice (a caller may change it).
func DefaultClients() []int { return []int{1, 16, 64} }

// QuickClients returns the client counts of a quick run (-quick).
func QuickClients() []int { return []int{1, 16} }

// Config says what Run measures. Run never writes to it.
type Config struct {
	Targets   []Target
	Clients   []int         // default DefaultClients()
	Workloads []string      // default bench.DefaultWorkloads()
	Duration  time.Duration // each step, default DefaultDuration
	MaxOps    int64         // each step, default DefaultMaxOps

	// Rounds runs the whole suite this many times (default 1), the
	// targets in turn forwards, then backwards (A B … B A …), so that
	// two targets compared with each other meet the machine's slow
	// minutes alike; each step's row is then the round with the median
	// rate, carrying the lowest and highest rate of its rounds.
	Rounds int

	// Progress, if set, receives one line at the start of each target and
	// at the end of each step.
	Progress io.Writer
}

// A Result is one row of the table: one step of one target.
type Result struct {
	Target            string
	Durability, Short string
	Durable, Baseline bool
	Version           string
	bench.Row

	// ServerCPU is the server process's CPU time (user + system) per
	// request during the step, for targets with a Pid; zero otherwise.
	ServerCPU time.Duration

	// Err, if set, says why the target gave no rows (it could not be
	// opened, or its run failed); Row is then empty.
	Err error

	// Rounds is how many rounds measured this step (Config.Rounds; 0 or 1
	// for a single run); Low and High are the lowest and highest of their
	// rates (see Rate), of which the row's is the median.
	Rounds    int
	Low, High float64
}

// Requests counts the calls a row made: every grant, plus a release per
// cycle. Polls of a held name by the Redis and PostgreSQL adapters are not
// counted.
func (r Result) Requests() int64 { return r.Grants + r.Cycles }

// Run runs every target of cfg in turn, each through every workload and
// client count it supports, and returns one Result per step. A target that
// fails gives one Result with Err and the suite goes on; only ctx ending
// stops it (its error is returned with the rows so far).
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	clients := cfg.Clients
	if len(clients) == 0 {
		clients = DefaultClients()
	}
	workloads := cfg.Workloads
	if len(workloads) == 0 {
		workloads = bench.DefaultWorkloads()
	}
	d := orDefault(cfg.Duration, DefaultDuration)
	maxOps := orDefault(cfg.MaxOps, DefaultMaxOps)
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	rounds := max(cfg.Rounds, 1)
	start := time.Now()
	var rows []Result // every round's, in the order run
	for round := range rounds {
		order := slices.Clone(cfg.Targets)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		of := ""
		if rounds > 1 {
			of = fmt.Sprintf("round %d/%d, ", round+1, rounds)
		}
		for i, t := range order {
			if err := ctx.Err(); err != nil {
				return merge(rows, cfg.Targets, rounds), err
			}
			fmt.Fprintf(progress, "[%7.1fs] %s%d/%d %s: %s\n", time.Since(start).Seconds(), of, i+1, len(order), t.Name, t.Durability)
			got, err := runTarget(ctx, t, clients, workloads, d, maxOps, func(r Result) {
				fmt.Fprintf(progress, "[%7.1fs]   %s\n", time.Since(start).Seconds(), progressLine(r))
			})
			rows = append(rows, got...)
			if err != nil {
				if ctx.Err() != nil {
					return merge(rows, cfg.Targets, rounds), ctx.Err()
				}
				fmt.Fprintf(progress, "[%7.1fs]   %s failed: %v\n", time.Since(start).Seconds(), t.Name, err)
				rows = append(rows, Result{Target: t.Name, Durability: t.Durability, Short: t.Short, Durable: t.Durable, Baseline: t.Baseline, Err: err})
			}
		}
	}
	return merge(rows, cfg.Targets, rounds), nil
}

// merge turns the rows of every round (of rounds) into one row per step, in the order
// of the targets and, within a target, of the first round's steps: the
// round with the median rate (the lower middle of an even count), with the
// lowest and highest rate. A target that failed in any round keeps its
// failure row (once) after its steps.
func merge(rows []Result, targets []Target, rounds int) []Result {
	if rounds == 1 {
		return rows
	}
	type key struct {
		target, names string
		clients       int
	}
	steps := map[key][]Result{}
	var order []key
	failed := map[string]Result{}
	for _, r := range rows {
		if r.Err != nil {
			if _, ok := failed[r.Target]; !ok {
				failed[r.Target] = r
			}
			continue
		}
		k := key{r.Target, r.Names, r.Clients}
		if _, ok := steps[k]; !ok {
			order = append(order, k)
		}
		steps[k] = append(steps[k], r)
	}
	var out []Result
	for _, t := range targets {
		for _, k := range order {
			if k.target != t.Name {
				continue
			}
			rs := steps[k]
			slices.SortFunc(rs, func(a, b Result) int {
				ra, _ := Rate(a)
				rb, _ := Rate(b)
				return cmp.Compare(ra, rb)
			})
			m := rs[(len(rs)-1)/2]
			m.Rounds = len(rs)
			m.Low, _ = Rate(rs[0])
			m.High, _ = Rate(rs[len(rs)-1])
			out = append(out, m)
		}
		if r, ok := failed[t.Name]; ok {
			out = append(out, r)
		}
	}
	return out
}

// runTarget runs one target's steps.
func runTarget(ctx context.Context, t Target, clients []int, workloads []string, d time.Duration, maxOps int64, report func(Result)) ([]Result, error) {
	base := Result{Target: t.Name, Durability: t.Durability, Short: t.Short, Durable: t.Durable, Baseline: t.Baseline}
	if t.Measure != nil {
		row, err := t.Measure(ctx, d, maxOps)
		if err != nil {
			return nil, err
		}
		r := base
		r.Row = row
		report(r)
		return []Result{r}, nil
	}
	cs := clients
	var ws []string
	for _, w := range workloads {
		if t.Workloads == nil || slices.Contains(t.Workloads, w) {
			ws = append(ws, w)
		}
	}
	if len(cs) == 0 || len(ws) == 0 {
		return nil, nil
	}
	store, version, closeStore, err := t.Open(ctx, slices.Max(cs))
	if err != nil {
		return nil, err
	}
	base.Version = version
	var out []Result
	var cpu0 time.Duration
	rows, err := bench.Run(ctx, bench.Config{
		Store:     store,
		Clients:   cs,
		Workloads: ws,
		Duration:  d,
		MaxOps:    maxOps,
		Progress: func(p bench.Progress) {
			if p.Row == nil {
				cpu0, _ = processCPU(t.Pid)
				return
			}
			r := base
			r.Row = *p.Row
			if cpu1, err := processCPU(t.Pid); err == nil && t.Pid != 0 && r.Requests() > 0 {
				r.ServerCPU = (cpu1 - cpu0) / time.Duration(r.Requests())
			}
			out = append(out, r)
			report(r)
		},
	})
	_ = rows // the same rows as out, which carry the server's CPU time
	return out, errors.Join(err, closeStore())
}

// processCPU returns the user + system CPU time of process pid so far.
func processCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, errors.New("no pid")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state is the
	// first (field 3), utime and stime fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}

// progressLine renders a finished step on one line.
func progressLine(r Result) string {
	rate, unit := Rate(r)
	s := fmt.Sprintf("%-18s %-8s %3d clients %9.0f %-12s p50 %s p99 %s errors %d", // one line per step
		r.Target, r.Names, r.Clients, rate, unit, fmtMS(r.P50), fmtMS(r.P99), r.Errors)
	if r.ServerCPU > 0 {
		s += fmt.Sprintf(" server CPU %.1f µs/request", float64(r.ServerCPU)/float64(time.Microsecond))
	}
	if r.FirstError != nil {
		s += " (first error: " + r.FirstError.Error() + ")"
	}
	return s
}

// Rate returns the headline rate of a row and its unit: cycles/s for
// distinct names, grants/s for fresh ones, hand-overs/s for the hot name,
// syncs/s for the fsync floor.
func Rate(r Result) (float64, string) {
	switch r.Names {
	case bench.Distinct:
		return r.CyclesPerSec, "cycles/s"
	case bench.Fresh:
		return r.GrantsPerSec, "grants/s"
	case bench.Hot:
		return r.GrantsPerSec, "hand-overs/s"
	}
	return r.GrantsPerSec, "syncs/s"
}

func fmtMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
