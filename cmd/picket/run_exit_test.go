package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// deadServer returns the URL of a loopback port nobody listens on.
func deadServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// silentServer returns the URL of a loopback listener that accepts
// connections and never answers, as a paused server would.
func silentServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestRunExitStatuses runs picket run into every exit status of the table
// that "picket help" and README.md show, each with real processes, and
// checks that no status of the table is left untested.
func TestRunExitStatuses(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "picket.db")
	held := filepath.Join(dir, "held.db")
	decodeGrant(t, runPicket(t, "acquire", "-db", held, "-name", "n", "-ttl", "10m"))
	noexec := filepath.Join(dir, "noexec")
	writeFile(t, noexec, "#!/bin/sh\nexit 0\n") // mode 0600: not executable
	garbage := filepath.Join(dir, "garbage.db")
	writeFile(t, garbage, strings.Repeat("not a database\n", 512))
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "s3cret\n")
	authed := startServer(t, filepath.Join(dir, "authed.db"), "-require-token-file", tokenFile)

	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string // a piece of the message, if any
	}{
		{"command exits 0", []string{"run", "-db", db, "-name", "n", "--", "true"}, exitOK, ""},
		{"command exits 7", []string{"run", "-db", db, "-name", "n", "--", "sh", "-c", "exit 7"}, 7, ""},
		{"command killed by SIGKILL", []string{"run", "-db", db, "-name", "n", "--", "sh", "-c", "kill -9 $$"}, 128 + 9, ""},
		{"refused credential", []string{"run", "-server", authed.url, "-name", "n", "--", "true"}, exitError, "unauthorized"},
		{"no -name", []string{"run", "-db", db, "--", "true"}, exitUsage, "want NAME and a command: picket run NAME"},
		{"grace too long for the TTL", []string{"run", "-db", db, "-name", "n", "-ttl", "3s", "-grace", "5s", "--", "true"},
			exitUsage, "the largest grace that fits is 1.05s"},
		{"conflict exit code out of range", []string{"run", "-db", db, "-name", "n", "-conflict-exit-code", "256", "--", "true"}, exitUsage, ""},
		{"held", []string{"run", "-db", held, "-name", "n", "--", "true"}, exitHeld, "held"},
		{"held after -wait", []string{"run", "-db", held, "-name", "n", "-wait", "300ms", "--", "true"}, exitHeld, "held"},
		{"held with -conflict-exit-code", []string{"run", "-db", held, "-name", "n", "-conflict-exit-code", "42", "--", "true"}, 42, "held"},
		{"held with -conflict-exit-code and -wait", []string{"run", "-db", held, "-name", "n", "-wait", "300ms", "-conflict-exit-code", "0", "--", "true"}, 0, "held"},
		{"get of a free name", []string{"get", "-db", db, "-name", "free"}, exitNotFound, ""},
		{"server down", []string{"run", "-server", deadServer(t), "-name", "n", "--", "true"}, exitUnavailable, "connection refused"},
		{"server down for the whole -wait", []string{"run", "-server", deadServer(t), "-name", "n", "-wait", "1s", "--", "true"}, exitUnavailable, "connection refused"},
		{"server silent", []string{"run", "-server", silentServer(t), "-name", "n", "-ttl", "2s", "--", "true"}, exitUnavailable, "no answer from the store within 1s"},
		{"server silent for the whole -wait", []string{"run", "-server", silentServer(t), "-name", "n", "-wait", "1s", "--", "true"}, exitUnavailable, "no answer from the store"},
		{"store file refused", []string{"run", "-db", garbage, "-name", "n", "--", "true"}, exitUnavailable, "not a database"},
		{"command not found", []string{"run", "-db", db, "-name", "n", "--", "picket-no-such-command"}, exitCommandNotFound, "command not found"},
		{"command path not found", []string{"run", "-db", db, "-name", "n", "--", filepath.Join(dir, "missing")}, exitCommandNotFound, "command not found"},
		{"command not executable", []string{"run", "-db", db, "-name", "n", "--", noexec}, exitNotExecutable, "cannot execute"},
		{"command is a directory", []string{"run", "-db", db, "-name", "n", "--", dir}, exitNotExecutable, "cannot execute"},
	}
	tested := map[int]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runPicket(t, tc.args...)
			if r.code != tc.want {
				t.Errorf("picket %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.wantStderr)
			}
		})
		tested[tc.want] = true
	}

	t.Run("interrupted while waiting", func(t *testing.T) {
		cmd, out, errb := startPicket(t, "run", "-db", held, "-name", "n", "-wait", "1m", "--", "true")
		// Once it has the file open, its signal handlers are in place.
		waitFor(t, 30*time.Second, "picket run to open the store", func() bool { return hasOpen(cmd.Process.Pid, held) })
		cmd.Process.Signal(syscall.SIGINT)
		if r := waitPicket(t, cmd, out, errb, 30*time.Second); r.code != exitInterrupted {
			t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitInterrupted, r.stderr)
		}
	})
	tested[exitInterrupted] = true
	tested[exitLost] = true // TestRunStopsCommandWhenLeaseLost, TestRunStopsBeforeTheDeadline

	for _, s := range exitStatuses {
		if code, err := strconv.Atoi(s.code); err == nil && !tested[code] {
			t.Errorf("exit status %d (%s) is in the table but not tested", code, s.meaning)
		}
	}
}

// hasOpen reports whether process pid has path open.
func hasOpen(pid int, path string) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); target == path {
			return true
		}
	}
	return false
}

// TestReadmeListsExitStatuses checks that the table of exit statuses in
// README.md's "picket run" section lists exactly the statuses of the table
// "picket help" prints.
func TestReadmeListsExitStatuses(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## picket run")
	if start < 0 {
		t.Fatal(`README.md has no "## picket run" section`)
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	row := regexp.MustCompile("(?m)^\\| `?([0-9+N]+)`? \\|")
	var got []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got = append(got, m[1])
	}
	var want []string
	for _, s := range exitStatuses {
		want = append(want, s.code)
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README.md's exit statuses differ from picket help's (-want +got):\n%s", diff)
	}
}
