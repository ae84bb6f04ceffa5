package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// watchStampChild is the child mode "watch-stamp": it follows the name
// "followed" and prints "wake TOKEN HELD MONO" (CLOCK_MONOTONIC) for every
// state after the first, which it announces with "watching".
func watchStampChild(ctx context.Context, s *sqlite.Store) error {
	st, err := s.Watch(ctx, "followed", lease.State{})
	if err != nil {
		return err
	}
	fmt.Println("watching")
	for {
		if st, err = s.Watch(ctx, "followed", st); err != nil {
			return err
		}
		fmt.Printf("wake %d %v %d\n", st.Token, st.Held, monoNow())
	}
}

// BenchmarkWatchWakeOtherProcess: how long a watcher in another process on
// the file takes to learn of a grant (issue 21's target: p99 within 20 ms
// of the commit). Each iteration grants the name here and releases it once
// the child has printed the grant; the figures are from just before the
// Acquire call (so they include the commit's fsync) to the child's wake,
// and the Acquire call's own duration, for comparison.
func BenchmarkWatchWakeOtherProcess(b *testing.B) {
	path := filepath.Join(b.TempDir(), "picket.db")
	s := mustOpenPath(b, path)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	_, lines := startChild(b, ctx, "watch-stamp", path, "w", 0)
	for l := nextLine(b, lines); l != "watching"; l = nextLine(b, lines) {
		if l != "ready" {
			b.Fatalf("child: %q", l)
		}
	}
	var wake, call []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := monoNow()
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "followed", Holder: "h", TTL: time.Hour})
		t1 := monoNow()
		if err != nil {
			b.Fatal(err)
		}
		for {
			f := strings.Fields(nextLine(b, lines))
			if len(f) == 4 && f[0] == "wake" && f[1] == strconv.FormatUint(uint64(g.Token), 10) && f[2] == "true" {
				at, _ := strconv.ParseInt(f[3], 10, 64)
				wake, call = append(wake, time.Duration(at-t0)), append(call, time.Duration(t1-t0))
				break
			}
		}
		if err := s.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			b.Fatal(err)
		}
		for f := strings.Fields(nextLine(b, lines)); !(len(f) == 4 && f[2] == "false"); f = strings.Fields(nextLine(b, lines)) {
		}
	}
	b.StopTimer()
	reportQuantiles(b, "wake", wake)
	reportQuantiles(b, "acquire", call)
}

// reportQuantiles reports the p50 and p99 of ds in milliseconds.
func reportQuantiles(b *testing.B, what string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(q(0.50), what+"-p50-ms")
	b.ReportMetric(q(0.99), what+"-p99-ms")
}

// BenchmarkIdleWatchers: 1,000 watches of one held name (TTL an hour) in
// this process, waiting: the CPU the process spends while they wait (in %
// of one core, over a second per iteration) and whether the file changes
// (issue 21: under 1 % of a core and no writes).
func BenchmarkIdleWatchers(b *testing.B) {
	path := filepath.Join(b.TempDir(), "picket.db")
	s := mustOpenPath(b, path)
	g, err := s.Acquire(b.Context(), lease.AcquireRequest{Name: "idle", Holder: "h", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	s0, err := s.Watch(b.Context(), "idle", lease.State{})
	if err != nil || !s0.Held || s0.Token != g.Token {
		b.Fatalf("first read: %v, %v", s0, err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() { _, _ = s.Watch(ctx, "idle", s0) })
	}
	defer func() { cancel(); wg.Wait() }()
	time.Sleep(500 * time.Millisecond) // they read once and wait
	files := func() string {
		var out []string
		for _, p := range []string{path, path + "-wal"} {
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, fmt.Sprint(fi.Size(), fi.ModTime().UnixNano()))
		}
		return strings.Join(out, " ")
	}
	before := files()
	b.ResetTimer()
	var cpu, wall time.Duration
	for i := 0; i < b.N; i++ {
		c0, w0 := processCPU(b), time.Now()
		time.Sleep(time.Second)
		cpu, wall = cpu+processCPU(b)-c0, wall+time.Since(w0)
	}
	b.StopTimer()
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	changed := 0.0
	if files() != before {
		changed = 1
	}
	b.ReportMetric(changed, "files-changed")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
