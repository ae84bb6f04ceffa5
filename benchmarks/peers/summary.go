package peers

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/picketlock/picket/internal/bench"
)

// WriteSummary writes the side-by-side table of a run: one line per system
// at the largest client count the run used, its rate in each workload, its
// server CPU per request in the distinct workload, and one client's acquire
// p50; then the ratios picket is measured by (see the README). Systems and
// ratios the run has no rows for are left out.
func WriteSummary(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	top := 0
	for _, r := range results {
		if r.Err == nil && r.Names != "fsync" {
			top = max(top, r.Clients)
		}
	}
	find := func(target, names string, clients int) (Result, bool) {
		i := slices.IndexFunc(results, func(r Result) bool {
			return r.Target == target && r.Names == names && r.Clients == clients && r.Err == nil
		})
		if i < 0 {
			return Result{}, false
		}
		return results[i], true
	}
	rate := func(target, names string) string {
		if r, ok := find(target, names, top); ok {
			v, _ := Rate(r)
			return Thousands(v)
		}
		return "—"
	}
	fmt.Fprintf(bw, "| %d clients | durability | cycles/s (distinct) | fresh grants/s | hot hand-overs/s | server CPU µs/request (distinct) | 1 client: acquire p50 ms |\n", top)
	fmt.Fprintln(bw, "|---|---|---:|---:|---:|---:|---:|")
	var seen []string
	for _, r := range results {
		if r.Err != nil || slices.Contains(seen, r.Target) {
			continue
		}
		seen = append(seen, r.Target)
		if r.Names == "fsync" {
			fmt.Fprintf(bw, "| %s | %s | | | | | %s (one fdatasync) |\n", cell(r.Target), shortDurability(r), ms3(r.P50))
			continue
		}
		cpu, p50 := "", "—"
		if d, ok := find(r.Target, bench.Distinct, top); ok && d.ServerCPU > 0 {
			cpu = strconv.FormatFloat(float64(d.ServerCPU)/float64(time.Microsecond), 'f', 1, 64)
		}
		if one, ok := find(r.Target, bench.Distinct, 1); ok {
			p50 = ms3(one.P50)
		}
		fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(r.Target), shortDurability(r),
			rate(r.Target, bench.Distinct), rate(r.Target, bench.Fresh), rate(r.Target, bench.Hot), cpu, p50)
	}
	fmt.Fprintln(bw)
	for _, c := range Ratios(results, top) {
		fmt.Fprintf(bw, "- %s: %s / %s = **%.2f×**\n", c.What, Thousands(c.A), Thousands(c.B), c.A/c.B)
	}
	if er := EtcdRatios(results); len(er) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "picket on etcd against etcd's own Mutex on the same cluster:")
		fmt.Fprintln(bw)
		for _, c := range er {
			fmt.Fprintf(bw, "- %s: %s / %s = **%.2f×**\n", c.What, Thousands(c.A), Thousands(c.B), c.A/c.B)
		}
	}
	return bw.Flush()
}

// A Ratio compares two rates of one run.
type Ratio struct {
	What string
	A, B float64
}

// Ratios returns the comparisons picket is judged by, at clients clients,
// for the rows results has: requests/s over HTTP against the trivial
// handler's, cycles/s over HTTP against one-member etcd's, and fresh grants
// embedded against Redis with appendfsync always (picket on etcd against
// etcd's own mutex: EtcdRatios).
func Ratios(results []Result, clients int) []Ratio {
	get := func(target, names string, requests bool) (float64, bool) {
		for _, r := range results {
			if r.Target == target && r.Names == names && r.Clients == clients && r.Err == nil {
				if requests {
					return float64(r.Requests()) / r.Elapsed.Seconds(), r.Elapsed > 0
				}
				v, _ := Rate(r)
				return v, true
			}
		}
		return 0, false
	}
	var out []Ratio
	add := func(what, ta, tb, names string, requests bool) {
		a, okA := get(ta, names, requests)
		b, okB := get(tb, names, requests)
		if okA && okB && b > 0 {
			out = append(out, Ratio{fmt.Sprintf(what, clients), a, b})
		}
	}
	add("picket over HTTP / the trivial handler, requests/s at %d clients (distinct)", "picket-http", "trivial-http", bench.Distinct, true)
	add("picket over HTTP / the trivial handler, requests/s at %d clients (fresh)", "picket-http", "trivial-http", bench.Fresh, true)
	add("picket over HTTP / etcd (1 member), cycles/s at %d clients", "picket-http", "etcd-1", bench.Distinct, false)
	add("picket embedded / Redis appendfsync always, cycles/s at %d clients", "picket-embedded", "redis-always", bench.Distinct, false)
	add("picket embedded / Redis appendfsync always, fresh grants/s at %d clients", "picket-embedded", "redis-always", bench.Fresh, false)
	return out
}

// EtcdRatios returns picket on etcd against etcd's own Mutex on the same
// cluster, at every client count above one that the run has both rows
// for: cycles on distinct names (target 0.9x) and hand-overs of one hot name
// (target 0.8x), issue 20's targets.
func EtcdRatios(results []Result) []Ratio {
	var counts []int
	for _, r := range results {
		if r.Err == nil && r.Clients > 1 && !slices.Contains(counts, r.Clients) {
			counts = append(counts, r.Clients)
		}
	}
	slices.Sort(counts)
	var out []Ratio
	for _, label := range []string{"etcd-1", "etcd-3"} {
		for _, names := range []string{bench.Distinct, bench.Hot} {
			what := "cycles/s"
			if names == bench.Hot {
				what = "hot hand-overs/s"
			}
			for _, c := range counts {
				a, okA := rateOf(results, "picket-on-"+label, names, c)
				b, okB := rateOf(results, label, names, c)
				if okA && okB && b > 0 {
					out = append(out, Ratio{fmt.Sprintf("picket on %s / etcd's own Mutex, %s at %d clients", label, what, c), a, b})
				}
			}
		}
	}
	return out
}

// rateOf returns the rate of target's row for names at clients.
func rateOf(results []Result, target, names string, clients int) (float64, bool) {
	for _, r := range results {
		if r.Target == target && r.Names == names && r.Clients == clients && r.Err == nil {
			v, _ := Rate(r)
			return v, true
		}
	}
	return 0, false
}
