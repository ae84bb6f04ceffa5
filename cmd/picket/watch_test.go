package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchLine is one line of picket watch -json.
type watchLine struct {
	Name   string `json:"name"`
	Held   bool   `json:"held"`
	Owner  string `json:"owner"`
	Token  uint64 `json:"token"`
	Reason string `json:"reason"`
	Cursor string `json:"cursor"`
}

// TestWatchCommand: "picket watch -json NAME" in its own process prints the
// state, then a line for a grant, a renew... made by other picket
// processes, through the same SQLite file (-db: the watcher is woken across
// processes) and through a picket server (-server: a long poll); it exits 0
// on SIGTERM (-db) and SIGINT (-server).
func TestWatchCommand(t *testing.T) {
	for _, mode := range []string{"db", "server"} {
		t.Run(mode, func(t *testing.T) {
			db := tempDB(t)
			if r := runPicket(t, "acquire", "-db", db, "other", "-ttl", "1s"); r.code != exitOK { // watch creates no store
				t.Fatalf("acquire: exit %d: %s", r.code, r.stderr)
			}
			store := []string{"-db", db}
			sig := os.Signal(syscall.SIGTERM)
			if mode == "server" {
				store = []string{"-server", startServer(t, db).url}
				sig = os.Interrupt
			}
			w := picket(t, append(append([]string{"watch", "-json"}, store...), "jobs/nightly")...)
			stdout, err := w.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb syncBuffer
			w.Stderr = &errb
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Process.Kill() })
			lines := make(chan watchLine, 16)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					var l watchLine
					if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
						l.Reason = "bad line: " + sc.Text()
					}
					lines <- l
				}
			}()
			next := func(what string) watchLine {
				t.Helper()
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("%s: picket watch ended; stderr:\n%s", what, errb.String())
					}
					return l
				case <-time.After(30 * time.Second):
					t.Fatalf("%s: no line from picket watch within 30 s; stderr:\n%s", what, errb.String())
				}
				return watchLine{}
			}
			if l := next("first state"); l.Held || l.Token != 0 || l.Name != "jobs/nightly" || l.Cursor == "" {
				t.Fatalf("first state: %+v", l)
			}
			r := runPicket(t, append([]string{"acquire", "-name", "jobs/nightly", "-ttl", "1h", "-owner", "leader-1"}, store...)...)
			if r.code != 0 {
				t.Fatalf("acquire: %d %s", r.code, r.stderr)
			}
			g := decodeGrant(t, r)
			if l := next("after a grant"); !l.Held || l.Token != g.Token || l.Owner != "leader-1" || l.Reason != "granted" {
				t.Fatalf("after a grant of %d: %+v", g.Token, l)
			}
			r = runPicket(t, append([]string{"release", "-name", "jobs/nightly", "-holder", g.Holder, "-token", fmt.Sprint(g.Token)}, store...)...)
			if r.code != 0 {
				t.Fatalf("release: %d %s", r.code, r.stderr)
			}
			if l := next("after a release"); l.Held || l.Token != g.Token || l.Reason != "released" {
				t.Fatalf("after the release of %d: %+v", g.Token, l)
			}
			if err := w.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("picket watch after %v: %v; stderr:\n%s", sig, err, errb.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("picket watch did not exit within 30 s of %v", sig)
			}
			if s := errb.String(); strings.TrimSpace(s) != "" {
				t.Errorf("picket watch wrote to stderr:\n%s", s)
			}
		})
	}
}

// TestWatchUsage: the name is required, once; a bad name or -count is a
// usage error (exit 2), with nothing opened.
func TestWatchUsage(t *testing.T) {
	db := tempDB(t)
	for _, args := range [][]string{
		{"watch", "-db", db},
		{"watch", "-db", db, "a", "b"},
		{"watch", "-db", db, "-name", "a", "b"},
		{"watch", "-db", db, "-count", "-1", "a"},
		{"watch", "-db", db, "bad\x01name"},
	} {
		if r := runPicket(t, args...); r.code != 2 {
			t.Errorf("picket %q: exit %d, want 2; stderr: %s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a usage error created %s (%v)", db, err)
	}
}
