package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkHandOverTwoProcesses: a hot name shared by two processes (this
// one and a child), two goroutines each acquiring and releasing it with
// Wait. An op is one grant in this process. Reported: the p50 of the
// hand-overs from one process to the other (the grant's return minus the
// previous holder's release start, CLOCK_MONOTONIC) and within one, and
// the child's share of all grants. Run with a fixed count, e.g.
// -bench HandOverTwoProcesses -benchtime 2000x.
func BenchmarkHandOverTwoProcesses(b *testing.B) {
	path := filepath.Join(b.TempDir(), "picket.db")
	s := mustOpenPath(b, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, lines := startChild(b, ctx, "hot", path, "child", 600_000, "PICKET_TEST_WORKERS=2")
	if l := nextLine(b, lines); l != "ready" {
		b.Fatalf("child: %q", l)
	}
	var mu sync.Mutex
	var mine []grantRecord
	loopCtx, stop := context.WithCancel(ctx)
	b.ResetTimer()
	err := hotLoop(loopCtx, s, "parent", 2, 0, time.Hour, func(r grantRecord) {
		mu.Lock()
		defer mu.Unlock()
		if mine = append(mine, r); len(mine) == b.N {
			stop()
		}
	})
	b.StopTimer()
	stop()
	if err != nil && loopCtx.Err() == nil {
		b.Fatal(err)
	}
	cancel() // kills the child; its complete lines are kept
	var theirs []grantRecord
	for l := range lines {
		recs, _ := parseGrants([]byte(l), "child")
		theirs = append(theirs, recs...)
	}
	all := append(slices.Clone(mine), theirs...)
	slices.SortFunc(all, func(a, b grantRecord) int { return int(a.tok) - int(b.tok) })
	var across, within []float64
	for i := 1; i < len(all); i++ {
		a, c := all[i-1], all[i]
		if c.tok != a.tok+1 {
			continue
		}
		d := float64(c.granted - a.freed)
		if a.proc != c.proc {
			across = append(across, d)
		} else {
			within = append(within, d)
		}
	}
	p50 := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(p50(across), "across-p50-ns")
	b.ReportMetric(p50(within), "within-p50-ns")
	if len(all) > 0 {
		b.ReportMetric(100*float64(len(theirs))/float64(len(all)), "child-share-%")
	}
}
