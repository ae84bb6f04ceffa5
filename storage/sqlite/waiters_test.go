package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// startChild starts a waiter child (waiters_child_test.go) with extra
// environment, and returns its output lines as they come.
func startChild(t testing.TB, ctx context.Context, mode, path, id string, n int, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := child(t, ctx, mode, path, id, n)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, lines
}

// nextLine returns the child's next line, failing after 30 s.
func nextLine(t testing.TB, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the child's output ended")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("no line from the child within 30s")
		return ""
	}
}

func legacyEnv(legacy bool) []string {
	if legacy {
		return []string{"PICKET_TEST_LEGACY_HANDOVER=1"}
	}
	return nil
}

// crossProcessWaiterRun is the reproduction of issue 9 item 5: process A (a
// child) acquires and releases the name "hot" from 6 goroutines, so it
// always has waiters of its own; then this process asks for the name with
// Wait 3 s. It returns this process's grant, how many grants A had made by
// then, and this process's error.
func crossProcessWaiterRun(t *testing.T, legacy bool) (lease.Grant, int, error) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	_, lines := startChild(t, ctx, "hot", path, "A", 10_000, append(legacyEnv(legacy), "PICKET_TEST_WORKERS=6")...)
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child A: %q", l)
	}
	for range 50 { // A is going: its grants flow
		if l := nextLine(t, lines); !strings.HasPrefix(l, "grant ") {
			t.Fatalf("child A: %q", l)
		}
	}
	g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "B", Owner: "B", TTL: time.Minute, Wait: 3 * time.Second})
	if err == nil {
		if rerr := s.Release(ctx, "hot", "B", g.Token); rerr != nil {
			t.Errorf("release by B: %v", rerr)
		}
	}
	n := 50
	for len(lines) > 0 {
		<-lines
		n++
	}
	return g, n, err
}

// TestWaiterOtherProcess: a waiter in one process is served while another
// process hands the name over among its own waiters: B's Acquire (Wait 3 s)
// is granted, not timed out.
func TestWaiterOtherProcess(t *testing.T) {
	g, n, err := crossProcessWaiterRun(t, false)
	if err != nil {
		t.Fatalf("B's Acquire while A cycles the name: %v; want a grant", err)
	}
	t.Logf("B granted token %d after %d+ grants in A", g.Token, n)
}

// TestWaiterOtherProcessControl: with the old in-process queue in both
// processes, B's Acquire times out held while A hands the name over.
func TestWaiterOtherProcessControl(t *testing.T) {
	sqlite.SetLegacyHandOver(true)
	t.Cleanup(func() { sqlite.SetLegacyHandOver(false) })
	_, n, err := crossProcessWaiterRun(t, true)
	if err == nil {
		t.Fatal("the old queue served B: the control did not reproduce the starvation")
	}
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("B's Acquire: %v; want held", err)
	}
	t.Logf("caught: B held out for 3 s while A made %d+ grants", n)
}

// hotContention runs two hot children (3 goroutines each) on one file for
// d and returns their grants, failing on any error they print.
func hotContention(t *testing.T, d time.Duration, legacy bool) [][]grantRecord {
	path := filepath.Join(t.TempDir(), "picket.db")
	mustOpenPath(t, path) // create the file; keep a third opener
	ctx, cancel := context.WithTimeout(t.Context(), d+time.Minute)
	defer cancel()
	recs := make([][]grantRecord, 2)
	var wg sync.WaitGroup
	for i := range recs {
		id := strconv.Itoa(i)
		cmd := child(t, ctx, "hot", path, id, int(d.Milliseconds()))
		cmd.Env = append(cmd.Env, append(legacyEnv(legacy), "PICKET_TEST_WORKERS=3")...)
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("child %s: %v", id, err)
			}
			var other []string
			recs[i], other = parseGrants(out, id)
			if len(other) > 0 {
				t.Errorf("child %s printed %q", id, other)
			}
		})
	}
	wg.Wait()
	return recs
}

// fairnessViolation checks the grants of two processes: every token
// unique, the grants in token order one after the other in time (each
// granted after the previous one's release was sent), and each process
// with at least a quarter of its fair share.
func fairnessViolation(recs [][]grantRecord) (string, error) {
	var all []grantRecord
	for _, r := range recs {
		all = append(all, r...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].tok < all[j].tok })
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.tok == b.tok {
			return "", fmt.Errorf("token %d granted twice (processes %s and %s)", a.tok, a.proc, b.proc)
		}
		if b.granted <= a.freed {
			return "", fmt.Errorf("token %d (process %s) granted %v before token %d (process %s) was released",
				b.tok, b.proc, time.Duration(a.freed-b.granted), a.tok, a.proc)
		}
	}
	total := len(all)
	summary := fmt.Sprintf("%d grants: process 0 %d, process 1 %d", total, len(recs[0]), len(recs[1]))
	if total < 20 {
		return summary, fmt.Errorf("only %d grants in all", total)
	}
	for i, r := range recs {
		if 8*len(r) < total {
			return summary, fmt.Errorf("process %d had %d of %d grants, less than a quarter of its fair share", i, len(r), total)
		}
	}
	return summary, nil
}

// TestWaitersTwoProcessesFair: two processes contending on a hot name for
// 10 s (3 s with -short), three goroutines each: neither starves (each has
// at least a quarter of its fair share), and every token is unique and
// granted after the one before it was released.
func TestWaitersTwoProcessesFair(t *testing.T) {
	d := 10 * time.Second
	if testing.Short() {
		d = 3 * time.Second
	}
	summary, err := fairnessViolation(hotContention(t, d, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(summary)
}

// TestWaitersTwoProcessesFairControl: with the old in-process queue, one
// process keeps the name among its own goroutines and the other starves.
func TestWaitersTwoProcessesFairControl(t *testing.T) {
	summary, err := fairnessViolation(hotContention(t, 3*time.Second, true))
	if err == nil {
		t.Fatalf("the check passed the old queue: %s", summary)
	}
	t.Logf("caught: %v (%s)", err, summary)
}

// deadWaiterRun: a child process queues for a held name and is killed with
// SIGKILL; a waiter in this process queues behind it. Once the dead row's
// expiry has passed, a release hands the name over. It returns the answer
// of this process's waiter (nil error and holder "C" when served) and what
// the store says of the name after the release (the child's owner: "dead").
func deadWaiterRun(t *testing.T) (waitResult, lease.Info) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	g := acquire(t, s, "hot", "A", time.Minute)
	cmd, lines := startChild(t, ctx, "wait-once", path, "dead", 1, "PICKET_TEST_WAIT=1m")
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	waitRows(t, s, "hot", 1)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	c := startWaiter(ctx, s, "hot", "C")
	waitParked(t, s, "hot", 1)
	waitRows(t, s, "hot", 2)                                                 // the dead row, then C's
	time.Sleep(time.Until(killed.Add(2*time.Second + 500*time.Millisecond))) // the dead row's expiry (2 s) has passed
	if err := s.Release(ctx, "hot", "A", g.Token); err != nil {
		t.Fatal(err)
	}
	var r waitResult
	select {
	case r = <-c:
	case <-time.After(3 * time.Second):
		r = waitResult{holder: "C", err: errors.New("no grant within 3 s of the release")}
	}
	info, err := s.Get(ctx, "hot")
	if err != nil {
		t.Fatalf("Get after the release: %v", err)
	}
	return r, info
}

// waitRows waits (polling, at most 10 s) until n rows wait for name in
// the file.
func waitRows(t *testing.T, s *sqlite.Store, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sqlite.Waiting(s, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows wait for %q, want %d", sqlite.Waiting(s, name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeadWaiterSkipped: a waiter killed with SIGKILL never holds the name
// up past its row's expiry: the release hands it to the live waiter behind.
func TestDeadWaiterSkipped(t *testing.T) {
	r, info := deadWaiterRun(t)
	if r.err != nil || r.grant.Holder != "C" || info.Token != r.grant.Token {
		t.Fatalf("after the dead waiter: C got %+v, %v; the store says owner %q holds token %d; want C's", r.grant, r.err, info.Owner, info.Token)
	}
}

// TestDeadWaiterSkippedControl: if expired rows were served like live
// ones, the release would hand the name to the dead process.
func TestDeadWaiterSkippedControl(t *testing.T) {
	sqlite.SetLegacyDeadWaiters(true)
	t.Cleanup(func() { sqlite.SetLegacyDeadWaiters(false) })
	r, info := deadWaiterRun(t)
	if r.err == nil && info.Owner != "dead" {
		t.Fatal("C was served: the control did not hand the name to the dead waiter")
	}
	t.Logf("caught: the store says owner %q holds the name; C: %v", info.Owner, r.err)
}

// wakeRun ping-pongs the name "hot" between this process and a child whose
// waits have no timer at all (its fallback and row refresh set to an hour):
// rounds times, this process releases once the child is queued, and the
// child says when it was granted. It returns the wake-up latencies (the
// child's grant minus the release's start, CLOCK_MONOTONIC), stopping at
// the first wake-up that does not come within 3 s.
func wakeRun(t *testing.T, rounds int, env ...string) []time.Duration {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	g := acquire(t, s, "hot", "parent", time.Minute)
	env = append(env, "PICKET_TEST_WAIT=1m", "PICKET_TEST_FALLBACK=1h", "PICKET_TEST_WAITER_TTL=4h")
	_, lines := startChild(t, ctx, "wait-once", path, "W", rounds, env...)
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	var lat []time.Duration
	for range rounds {
		waitRows(t, s, "hot", 1)
		start := monoNow()
		if err := s.Release(ctx, "hot", "parent", g.Token); err != nil {
			t.Fatal(err)
		}
		var line string
		select {
		case line = <-lines:
		case <-time.After(3 * time.Second):
			t.Logf("waiters rows: %s", sqlite.DumpWaiters(s))
			return lat
		}
		var tok token.Token
		var at int64
		if _, err := fmt.Sscanf(line, "granted %d %d", &tok, &at); err != nil || tok != g.Token+1 {
			t.Fatalf("child: %q; want granted %d", line, g.Token+1)
		}
		lat = append(lat, time.Duration(at-start))
		var err error
		if g, err = s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "parent", TTL: time.Minute, Wait: 30 * time.Second}); err != nil {
			t.Fatalf("parent's Acquire: %v", err)
		}
	}
	return lat
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestWaiterWakeUpAcrossProcesses: a waiter in another process learns of
// the release that granted it from the change notification, with no timer:
// every one of 40 wake-ups comes (each within 3 s; the p50 is logged).
func TestWaiterWakeUpAcrossProcesses(t *testing.T) {
	const rounds = 40
	lat := wakeRun(t, rounds)
	if len(lat) != rounds {
		t.Fatalf("wake-up %d of %d did not come within 3 s", len(lat)+1, rounds)
	}
	slices.Sort(lat)
	t.Logf("cross-process wake-up: p50 %v, p90 %v, max %v", median(lat), lat[len(lat)*9/10], lat[len(lat)-1])
}

// TestWaiterWakeUpAcrossProcessesControl: without the notification the same
// child, which has no timer, is never woken.
func TestWaiterWakeUpAcrossProcessesControl(t *testing.T) {
	lat := wakeRun(t, 3, "PICKET_TEST_NO_WATCH=1")
	if len(lat) == 3 {
		t.Fatalf("the child was woken without the notification (%v)", lat)
	}
	t.Logf("caught: wake-up %d did not come within 3 s without the notification", len(lat)+1)
}
