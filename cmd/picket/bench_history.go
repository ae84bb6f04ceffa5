package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// runBenchHistory is "picket bench -history-cost R": the cost of the grant
// history on the grant path, in one run that alternates two temporary
// files, one with the history off and one with it on (the default
// retention), R rounds of every step on each, the order of the two
// switched every round so that neither always runs on a warmer or quieter
// machine. It prints each step's grants/s and the ratio on/off of the
// grants summed over the rounds.
func runBenchHistory(ctx context.Context, e *env, rounds int, clients []int, workloads []string, d time.Duration) error {
	dir, err := os.MkdirTemp("", "picket-bench-history-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	open := func(name string, opts ...sqlite.Option) (*sqlite.Store, error) {
		return sqlite.Open(filepath.Join(dir, name), opts...)
	}
	off, err := open("off.db", sqlite.WithHistory(0, 0))
	if err != nil {
		return err
	}
	defer off.Close()
	on, err := open("on.db", sqlite.WithHistory(lease.DefaultHistoryMaxEvents, lease.DefaultHistoryMaxAge))
	if err != nil {
		return err
	}
	defer on.Close()
	type key struct {
		names   string
		clients int
		history bool
	}
	grants := map[key]int64{}
	elapsed := map[key]time.Duration{}
	cpu := map[key]time.Duration{} // this process's CPU time during the steps: the machine's other load does not count
	steps := 2 * rounds * len(clients) * len(workloads)
	fmt.Fprintf(e.stderr, "picket bench -history-cost: two temporary files in %s, history off and on, alternating; %d steps of %v (about %v)\n",
		dir, steps, d, time.Duration(steps)*d)
	step := 0
	start := time.Now()
	for r := range rounds {
		order := []bool{false, true}
		if r%2 == 1 {
			order = []bool{true, false}
		}
		for _, w := range workloads {
			for _, c := range clients {
				for _, hist := range order {
					st := lease.Store(off)
					if hist {
						st = on
					}
					cpu0 := processCPU()
					rows, err := bench.Run(ctx, bench.Config{Store: st, Clients: []int{c}, Workloads: []string{w}, Duration: d})
					if err != nil {
						return err
					}
					cpu[key{w, c, hist}] += processCPU() - cpu0
					step++
					for _, row := range rows {
						k := key{row.Names, row.Clients, hist}
						grants[k] += row.Grants
						elapsed[k] += row.Elapsed
						fmt.Fprintf(e.stderr, "[%7.1fs] %d/%d round %d history %s: %s\n", time.Since(start).Seconds(), step, steps, r+1,
							map[bool]string{false: "off", true: "on"}[hist], progressLine(row))
					}
				}
			}
		}
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NAMES\tCLIENTS\tOFF GRANTS/S\tON GRANTS/S\tON/OFF\tOFF CPU µs/GRANT\tON CPU µs/GRANT\tOFF/ON\t")
	var sumOff, sumOn float64
	var cpuOff, cpuOn time.Duration
	var nOff, nOn int64
	for _, w := range workloads {
		for _, c := range clients {
			kOff, kOn := key{w, c, false}, key{w, c, true}
			rOff := float64(grants[kOff]) / elapsed[kOff].Seconds()
			rOn := float64(grants[kOn]) / elapsed[kOn].Seconds()
			sumOff, sumOn = sumOff+rOff, sumOn+rOn
			cOff := cpu[kOff].Seconds() * 1e6 / float64(max(grants[kOff], 1))
			cOn := cpu[kOn].Seconds() * 1e6 / float64(max(grants[kOn], 1))
			cpuOff, cpuOn, nOff, nOn = cpuOff+cpu[kOff], cpuOn+cpu[kOn], nOff+grants[kOff], nOn+grants[kOn]
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.3f\t%.1f\t%.1f\t%.3f\t\n", w, c, rOff, rOn, rOn/rOff, cOff, cOn, cOff/cOn)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	perOff := cpuOff.Seconds() / float64(max(nOff, 1))
	perOn := cpuOn.Seconds() / float64(max(nOn, 1))
	_, err = fmt.Fprintf(e.stdout, "history on / off, all steps: grants/s %.3f; by CPU per grant (off/on: the throughput a CPU-bound writer keeps) %.3f (the target is at least 0.90)\n",
		sumOn/sumOff, perOff/perOn)
	return err
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
