package sqlite_test

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/token"
)

// childOptions are the options of a child in mode on the file path, named
// id, for n rounds, with env added (child_test.go).
func childOptions(path, id string, n int, env ...string) childtest.Options {
	return childtest.Options{Env: append([]string{"PICKET_TEST_DB=" + path, "PICKET_TEST_ID=" + id, "PICKET_TEST_N=" + strconv.Itoa(n)}, env...)}
}

// child returns the command of a child process in mode, not started.
func child(t testing.TB, ctx context.Context, mode, path, id string, n int) *exec.Cmd {
	t.Helper()
	return childtest.Command(t, ctx, mode, childOptions(path, id, n))
}

// parseTokens reads a child's complete output lines: its tokens in order,
// and every line that is neither a token nor "ready".
func parseTokens(out []byte) (toks []token.Token, other []string) {
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasSuffix(line, "\n") {
			continue // cut short by a kill: never acknowledged
		}
		line = strings.TrimSuffix(line, "\n")
		if s, ok := strings.CutPrefix(line, "token "); ok {
			tok, err := token.Parse(s)
			if err == nil {
				toks = append(toks, tok)
				continue
			}
		}
		if line != "ready" {
			other = append(other, line)
		}
	}
	return toks, other
}

// TestTwoProcesses: two processes share one file, each acquiring and
// releasing 2,000 times, on one shared name (waiting for each other) and on
// names of their own. Every token is unique across both, each process sees
// its tokens strictly increase, and no error (SQLITE_BUSY above all) reaches
// either. In the second run the two create the file at once.
func TestTwoProcesses(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for _, mode := range []string{"shared", "distinct"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "picket.db")
			if mode == "shared" {
				mustOpenPath(t, path) // create the file and keep a third store on it
			} // else the children create the file together
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			outs := make([][]byte, 2)
			var wg sync.WaitGroup
			for i := range outs {
				cmd := child(t, ctx, mode, path, strconv.Itoa(i), rounds)
				wg.Go(func() {
					var err error
					outs[i], err = cmd.Output()
					if err != nil {
						t.Errorf("child %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			seen := map[token.Token]int{}
			for i, out := range outs {
				toks, other := parseTokens(out)
				if len(other) > 0 {
					t.Errorf("child %d printed %q", i, other)
				}
				if len(toks) != rounds {
					t.Errorf("child %d printed %d tokens, want %d", i, len(toks), rounds)
				}
				for j, tok := range toks {
					if j > 0 && tok <= toks[j-1] {
						t.Errorf("child %d: token %d after %d", i, tok, toks[j-1])
					}
					if c, ok := seen[tok]; ok {
						t.Errorf("token %d granted to child %d and child %d", tok, c, i)
					}
					seen[tok] = i
				}
			}
			switches, prev := 0, -1
			for tok := token.Token(1); tok <= token.Token(2*rounds); tok++ {
				if c, ok := seen[tok]; ok && c != prev {
					switches, prev = switches+1, c
				}
			}
			t.Logf("the tokens went from one child to the other %d times", switches-1)
			if st := readFileState(t, path); st.Counter != int64(2*rounds) || st.Leases != 0 {
				t.Errorf("file holds %+v, want counter %d and no leases", st, 2*rounds)
			}
		})
	}
}

// TestKill: a process granting in a loop is killed with SIGKILL at random
// moments, 50 times. After each restart the next token exceeds every token
// acknowledged (printed) before the kill, and the file passes PRAGMA
// integrity_check at the end.
func TestKill(t *testing.T) {
	kills := 50
	if testing.Short() {
		kills = 10
	}
	path := filepath.Join(t.TempDir(), "picket.db")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var highest token.Token // highest acknowledged token so far
	var granted int
	for k := 0; k < kills && ctx.Err() == nil; k++ {
		p := childtest.Start(t, ctx, "grant-loop", childOptions(path, strconv.Itoa(k), 0))
		if ready, err := p.Line(0); err != nil || ready != "ready" {
			p.Kill()
			p.Wait(0)
			t.Fatalf("kill %d: child said %q, %v; want ready", k, ready, err)
		}
		time.Sleep(time.Duration(2+rand.IntN(100)) * time.Millisecond)
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Wait(0)

		toks, other := parseTokens(p.Output())
		if len(other) > 0 {
			t.Errorf("kill %d: child printed %q", k, other)
		}
		if len(toks) > 0 && toks[0] <= highest {
			t.Errorf("kill %d: first token %d after %d was acknowledged before the kill", k, toks[0], highest)
		}
		for i := 1; i < len(toks); i++ {
			if toks[i] <= toks[i-1] {
				t.Errorf("kill %d: token %d after %d", k, toks[i], toks[i-1])
			}
		}
		if len(toks) > 0 {
			highest = toks[len(toks)-1]
		}
		granted += len(toks)
	}
	t.Logf("%d kills, %d acknowledged grants, highest token %d", kills, granted, highest)
	if granted == 0 {
		t.Fatal("no child granted anything before it was killed")
	}
	s := mustOpenPath(t, path)
	if g := acquire(t, s, "after-kills", "h", time.Minute); g.Token <= highest {
		t.Errorf("after the kills: token %d, want above %d", g.Token, highest)
	}
	var check string
	if err := rawDB(t, path).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v; want ok", check, err)
	}
}
