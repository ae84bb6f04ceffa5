package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
)

// The commands of these tests stamp a file with the host's boot clock
// (/proc/uptime counts CLOCK_BOOTTIME, the store's clock, in 10 ms steps):
// "A 1234.56" lines from the first command, "B ..." from the second.
const (
	// stamper stamps "$2 <uptime>" into $1 every 20 ms until killed; it
	// ignores SIGTERM, so only SIGKILL stops it.
	stamper = `trap '' TERM; while :; do read u i < /proc/uptime; echo "$2 $u" >> "$1"; sleep 0.02; done`
	// escaper starts the stamper in a session of its own, out of picket
	// run's reach, and writes its pid to $3: the control.
	escaper = `setsid sh -c 'echo $$ > "$3"; ` + `trap "" TERM; while :; do read u i < /proc/uptime; echo "$2 $u" >> "$1"; sleep 0.02; done' sh "$1" "$2" "$3" </dev/null >/dev/null 2>&1 & wait`
	// fiveStamps stamps five times and exits.
	fiveStamps = `for n in 1 2 3 4 5; do read u i < /proc/uptime; echo "$2 $u" >> "$1"; sleep 0.02; done`
)

// stampSpans returns, per writer, the first and last stamp.
func stampSpans(t testing.TB, path string) map[string][2]float64 {
	t.Helper()
	spans := map[string][2]float64{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue // a line cut by SIGKILL
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		s, ok := spans[f[0]]
		if !ok {
			s[0] = v
		}
		s[1] = v
		spans[f[0]] = s
	}
	return spans
}

// cutOffRun runs the scenario of the issue: two servers on one file; a
// first "picket run" through server A runs script; once its lease has been
// renewed, A is paused (SIGSTOP), so that its renewals hang; a second
// "picket run" through server B waits for the name and stamps five times.
// It returns the first picket run's exit status and the stamp spans.
func cutOffRun(t *testing.T, script string) (int, map[string][2]float64) {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "picket.db")
	stamps := filepath.Join(dir, "stamps")
	escaped := filepath.Join(dir, "escaped")
	a, b := startServer(t, db), startServer(t, db)
	t.Cleanup(func() {
		// The control's escaped stamper, if any.
		if pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, escaped))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	first := picket(t, "run", "-server", a.url, "-name", "job", "-ttl", "3s", "--", "sh", "-c", script, "sh", stamps, "A", escaped)
	var out1, err1 bytes.Buffer
	first.Stdout, first.Stderr = &out1, &err1
	first.WaitDelay = time.Second // in case a process that escaped holds the pipes
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the first command to stamp", func() bool { return strings.Contains(readFile(t, stamps), "A ") })

	// Wait for a renewal to land (the expiry moves), so that A is paused
	// between two requests, not inside a write transaction.
	c, err := httpapi.NewClient(b.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := c.Get(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a renewal", func() bool {
		now, err := c.Get(ctx, "job")
		return err == nil && !now.Expires.Equal(info.Expires)
	})
	a.cmd.Process.Signal(syscall.SIGSTOP)
	defer a.cmd.Process.Signal(syscall.SIGCONT)

	r2 := runPicket(t, "run", "-server", b.url, "-name", "job", "-ttl", "3s", "-wait", "30s",
		"--", "sh", "-c", fiveStamps, "sh", stamps, "B")
	if r2.code != 0 {
		t.Errorf("the second picket run: exit %d, want 0; stderr:\n%s", r2.code, r2.stderr)
	}
	r1 := waitPicket(t, first, &out1, &err1, 30*time.Second)
	t.Logf("the first picket run: exit %d; stderr:\n%s", r1.code, r1.stderr)
	time.Sleep(100 * time.Millisecond) // a stamp the control's escaper may still add
	return r1.code, stampSpans(t, stamps)
}

// TestRunStopsBeforeTheDeadline cuts a running "picket run" off from its
// store (its server paused) while a second one waits for the name through
// another server on the same file. The first command ignores SIGTERM, so
// only the SIGKILL of the stop schedule ends it: on the boot-clock stamps
// the two commands write, the first one's last stamp comes before the
// second one's first. Before, with the default -grace 10s and a 3 s TTL, the
// first command got SIGTERM at the deadline and ran 10 s more, side by side
// with the second.
//
// The control runs the same check on a command that moves its stamper out
// of picket run's process group (setsid), where no stop reaches it: the
// overlap must be reported.
func TestRunStopsBeforeTheDeadline(t *testing.T) {
	t.Run("picket run's command", func(t *testing.T) {
		code, spans := cutOffRun(t, stamper)
		if code != exitLost {
			t.Errorf("the first picket run: exit %d, want %d", code, exitLost)
		}
		a, b := spans["A"], spans["B"]
		if a[1] == 0 || b[0] == 0 {
			t.Fatalf("missing stamps: %v", spans)
		}
		if overlap := a[1] - b[0]; overlap >= 0 {
			t.Errorf("the commands overlapped: the first stamped until %.2f, the second from %.2f (%.2f s)", a[1], b[0], overlap)
		}
		t.Logf("the first command's last stamp %.2f, the second's first %.2f: %.2f s apart", a[1], b[0], b[0]-a[1])
	})
	t.Run("control: a command out of picket run's reach", func(t *testing.T) {
		_, spans := cutOffRun(t, escaper)
		a, b := spans["A"], spans["B"]
		if a[1] == 0 || b[0] == 0 {
			t.Fatalf("missing stamps: %v", spans)
		}
		if a[1] < b[0] {
			t.Errorf("the check missed the overlap: the escaped stamper stamped until %.2f, the second from %.2f", a[1], b[0])
		}
		t.Logf("control: overlap of %.2f s caught", a[1]-b[0])
	})
}

// TestRunCommandDiesWithPicketRun kills "picket run" with SIGKILL: its
// command (a shell) must be gone within a second, by the parent-death
// signal, and what the command started (a sleep in the background) soon
// after, by the guard. Before, they kept running with no lease and a second picket run
// started beside them.
//
// The control runs the same check on a process the command moved out of
// reach (setsid, in a session of its own): it survives, and the check says
// so.
func TestRunCommandDiesWithPicketRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   string
		wantGone bool
	}{
		{"the command and its child", `sleep 1000 & echo "$$ $!" > "$1"; while :; do sleep 0.05; done`, true},
		{"control: a process moved out of reach", `setsid sh -c 'echo $$ > "$1"; exec sleep 1000' sh "$1" </dev/null >/dev/null 2>&1 & wait`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			cmd := picket(t, "run", "-db", filepath.Join(dir, "picket.db"), "-name", "job", "-ttl", "1m",
				"--", "sh", "-c", tc.script, "sh", pidFile)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "the command to start", func() bool { return strings.HasSuffix(readFile(t, pidFile), "\n") })
			var pids []int
			for _, f := range strings.Fields(readFile(t, pidFile)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}

			cmd.Process.Kill()
			cmd.Wait()
			killed := time.Now()
			// The command itself goes by the kernel's parent-death signal,
			// at once: a second is a generous bound. Its child goes by the
			// guard, a process that must be scheduled to act: on this
			// shared machine that can take a while, so its bound is looser.
			goneWithin := func(pid int, limit time.Duration) (time.Duration, bool) {
				for {
					if st := procState(pid); st == "gone" || st == "Z" {
						return time.Since(killed), true
					}
					if time.Since(killed) > limit {
						return time.Since(killed), false
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			limits := []time.Duration{time.Second, 10 * time.Second}
			for i, pid := range pids {
				took, gone := goneWithin(pid, limits[i])
				switch {
				case tc.wantGone && !gone:
					t.Errorf("process %d (%d of the command's) is in state %s %v after picket run was killed",
						pid, i, procState(pid), took.Round(time.Millisecond))
				case !tc.wantGone && gone:
					t.Errorf("control: the escaped process %d is gone; the check cannot tell", pid)
				case tc.wantGone:
					t.Logf("process %d (%d of the command's) was gone %v after picket run was reaped", pid, i, took.Round(time.Millisecond))
				default:
					t.Logf("control: the escaped process %d still runs %v later: caught", pid, took.Round(time.Millisecond))
				}
			}
		})
	}
}
