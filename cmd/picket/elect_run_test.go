//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// TestElectWithPicketRun: the README's shell recipe. "picket run -wait
// -owner ADDR" is a candidate: the one that gets the name runs its command
// with the term in $PICKET_TOKEN, the other waits; followers, "picket watch
// -json" and the library's Election.Observe, see the owner as the leader's
// value with its term. When the leader's command ends, the waiting
// candidate leads at once with a higher term.
func TestElectWithPicketRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "picket.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := lease.NewElection(mustManager(st), "svc/leader", time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	leaders := e.Observe(ctx)
	defer func() { // stop observing before the store closes (deferred earlier)
		cancel()
		for range leaders {
		}
	}()

	// "picket watch -json": its held states, as leaders.
	watch := picket(t, "watch", "-db", db, "-json", "svc/leader")
	wout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var wstderr syncBuffer
	watch.Stderr = &wstderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	watched := make(chan lease.Leader, 16)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		sc := bufio.NewScanner(wout)
		for sc.Scan() {
			var st struct {
				Held  bool   `json:"held"`
				Owner string `json:"owner"`
				Token uint64 `json:"token"`
			}
			if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
				t.Errorf("picket watch -json printed %q: %v", sc.Text(), err)
				continue
			}
			if st.Held {
				watched <- lease.Leader{Value: st.Owner, Token: token.Token(st.Token)}
			}
		}
		watch.Wait()
	}()
	t.Cleanup(func() {
		watch.Process.Kill()
		<-watchDone
	})
	// watchedLeader returns the next held state picket watch printed with
	// another term than last (renewals repeat the term).
	watchedLeader := func(last token.Token) lease.Leader {
		t.Helper()
		limit := time.After(electStep)
		for {
			select {
			case l := <-watched:
				if l.Token != last {
					return l
				}
			case <-limit:
				t.Fatalf("picket watch printed no leader after term %d within %v:\n%s", last, electStep, &wstderr)
			}
		}
	}

	// candidate starts "picket run" whose command prints its term and runs
	// until its stdin (picket run's) closes.
	type cand struct {
		in   io.WriteCloser
		toks chan string
		done chan struct{}
	}
	candidate := func(addr string) cand {
		cmd := picket(t, "run", "-db", db, "-name", "svc/leader", "-ttl", "10s", "-wait", "1m", "-owner", addr,
			"--", "sh", "-c", `echo "$PICKET_TOKEN"; cat >/dev/null`)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := cand{in, make(chan string, 1), make(chan struct{})}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				c.toks <- strings.TrimSpace(sc.Text())
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("picket run -owner %s exited %d:\n%s", addr, code, &stderr)
			}
			close(c.done)
		}()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-c.done
		})
		return c
	}
	recvStep := func(ch <-chan string, what string) string {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(electStep):
			t.Fatalf("no %s within %v", what, electStep)
		}
		return ""
	}
	leaderStep := func(what string) lease.Leader {
		t.Helper()
		select {
		case l := <-leaders:
			return l
		case <-time.After(electStep):
			t.Fatalf("no %s within %v", what, electStep)
		}
		return lease.Leader{}
	}

	a := candidate("10.0.0.1:80")
	t1 := recvStep(a.toks, "term of the first candidate")
	l := leaderStep("first leader")
	if strconv.FormatUint(uint64(l.Token), 10) != t1 || l.Value != "10.0.0.1:80" {
		t.Fatalf("observed %v; the command ran with PICKET_TOKEN=%s as 10.0.0.1:80", l, t1)
	}
	if w := watchedLeader(0); w.Token != l.Token || w.Value != l.Value {
		t.Fatalf("picket watch printed %v, the library observed %v", w, l)
	}
	b := candidate("10.0.0.2:80") // waits
	a.in.Close()                  // the leader's command ends: picket run releases
	t2 := recvStep(b.toks, "term of the second candidate")
	l = leaderStep("second leader")
	n1, _ := strconv.ParseUint(t1, 10, 64)
	if strconv.FormatUint(uint64(l.Token), 10) != t2 || l.Value != "10.0.0.2:80" || uint64(l.Token) <= n1 {
		t.Fatalf("observed %v after term %s; the command ran with PICKET_TOKEN=%s as 10.0.0.2:80", l, t1, t2)
	}
	if w := watchedLeader(token.Token(n1)); w.Token != l.Token || w.Value != l.Value {
		t.Fatalf("picket watch printed %v, the library observed %v", w, l)
	}
	b.in.Close()
	<-a.done
	<-b.done
	watch.Process.Signal(syscall.SIGTERM)
	<-watchDone
	if code := watch.ProcessState.ExitCode(); code != 0 {
		t.Errorf("picket watch exited %d on SIGTERM:\n%s", code, &wstderr)
	}
}
