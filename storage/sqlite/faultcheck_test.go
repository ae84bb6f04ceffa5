package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/token"
)

// ack is a grant a fault child printed, so acknowledged to its caller.
type ack struct {
	tok          token.Token
	name, holder string
}

// childRun is what one fault child said before it died.
type childRun struct {
	integrity string   // its PRAGMA integrity_check answer
	acks      []ack    // in the order printed
	seen      []ack    // grants a reader saw (PICKET_TEST_READER)
	other     []string // anything else, "error ..." above all
	killed    bool     // it died of SIGKILL
}

// parseRun reads a fault child's complete lines; a line cut short by a
// kill was never acknowledged.
func parseRun(out []byte) childRun {
	var r childRun
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasSuffix(line, "\n") {
			continue
		}
		line = strings.TrimSuffix(line, "\n")
		if s, ok := strings.CutPrefix(line, "integrity "); ok {
			r.integrity = s
			continue
		}
		if f := strings.Fields(line); len(f) == 4 && (f[0] == "ack" || f[0] == "seen") {
			if tok, err := token.Parse(f[1]); err == nil {
				if f[0] == "ack" {
					r.acks = append(r.acks, ack{tok, f[2], f[3]})
				} else {
					r.seen = append(r.seen, ack{tok, f[2], f[3]})
				}
				continue
			}
		}
		if line != "ready" {
			r.other = append(r.other, line)
		}
	}
	return r
}

// startFault starts a fault child in mode on path with extra environment;
// the caller kills it (or it kills itself) and calls finish.
func startFault(t *testing.T, ctx context.Context, mode, path, id string, env ...string) (cmd *exec.Cmd, ready func() error, finish func() childRun) {
	t.Helper()
	p := childtest.Start(t, ctx, mode, childOptions(path, id, 0, env...))
	ready = func() error {
		for {
			line, err := p.Line(0)
			if err != nil {
				return fmt.Errorf("child said %q: %w", p.Output(), err)
			}
			if line == "ready" {
				return nil
			}
		}
	}
	finish = func() childRun {
		p.Wait(0)
		run := parseRun(p.Output())
		run.killed = p.Killed()
		return run
	}
	return p.Cmd, ready, finish
}

// tokenLog checks the tokens of a series of child runs against the promise:
// every token a run acknowledges exceeds every token acknowledged in the
// runs before it (a restart never goes back), and every token a reader saw
// in them (what a store shows is on disk: a grant shown and then taken back
// by a power loss would be shown again for another holder), and no token
// is acknowledged twice, nor one the file already holds for a grant nobody
// was told of.
type tokenLog struct {
	highest    token.Token         // highest acknowledged so far
	shown      ack                 // the grant of the highest token a reader saw so far
	seen       map[token.Token]ack // every acknowledged grant
	unacked    map[token.Token]ack // committed, never acknowledged
	violations []string            // what broke the promise
	acks       int                 // acknowledged grants, all runs
}

func newTokenLog() *tokenLog {
	return &tokenLog{seen: map[token.Token]ack{}, unacked: map[token.Token]ack{}}
}

func (l *tokenLog) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// add checks run number i's acknowledgements.
func (l *tokenLog) add(i int, acks []ack) {
	before := l.highest
	for _, a := range acks {
		if a.tok <= before {
			l.violate("run %d: token %d granted for %q after %d was acknowledged in an earlier run", i, a.tok, a.name, before)
		} else if a.tok <= l.shown.tok {
			l.violate("run %d: token %d granted to %s for %q after a reader saw token %d granted to %s in an earlier run",
				i, a.tok, a.holder, a.name, l.shown.tok, l.shown.holder)
		}
		if prev, ok := l.seen[a.tok]; ok {
			l.violate("run %d: token %d granted twice: to %s for %q, before to %s for %q", i, a.tok, a.holder, a.name, prev.holder, prev.name)
		}
		if prev, ok := l.unacked[a.tok]; ok && prev.holder != a.holder {
			l.violate("run %d: token %d granted to %s for %q, but it was committed for %s (%q) before a crash", i, a.tok, a.holder, a.name, prev.holder, prev.name)
		}
		l.seen[a.tok] = a
		l.highest = max(l.highest, a.tok)
	}
	l.acks += len(acks)
}

// addShown notes the grants a reader saw in run i (after add for that run:
// they bind the runs after it).
func (l *tokenLog) addShown(seen []ack) {
	for _, a := range seen {
		if a.tok > l.shown.tok {
			l.shown = a
		}
	}
}

// report fails t with the violations, at most 20 of them.
func (l *tokenLog) report(t *testing.T) {
	t.Helper()
	for i, v := range l.violations {
		if i == 20 {
			t.Errorf("... and %d more", len(l.violations)-i)
			break
		}
		t.Error(v)
	}
}

// leaseRows reads the counter and every lease row of the file at path, on
// a read-only connection of its own.
func leaseRows(t *testing.T, path string) (counter token.Token, rows map[string]ack) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT value FROM counter").Scan(&counter); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	rs, err := db.QueryContext(ctx, "SELECT name, holder, token FROM leases")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	rows = map[string]ack{}
	for rs.Next() {
		var a ack
		if err := rs.Scan(&a.name, &a.holder, &a.tok); err != nil {
			t.Fatal(err)
		}
		rows[a.name] = a
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return counter, rows
}

// soak reports whether the long form of the fault tests was asked for.
func soak() bool { return os.Getenv("PICKET_SOAK") == "1" }

// TestTokenLogCatches: the checker of the fault tests reports each way of
// breaking the promise (the controls of its checks).
func TestTokenLogCatches(t *testing.T) {
	first := []ack{{1, "a", "h1"}, {3, "b", "h2"}}
	for _, tc := range []struct {
		name    string
		shown   []ack // what a reader saw in run 0
		unacked ack
		next    []ack
		want    int // violations
	}{
		{"fine", nil, ack{}, []ack{{5, "c", "h3"}, {4, "d", "h4"}}, 0},
		{"backwards", nil, ack{}, []ack{{2, "c", "h3"}}, 1},
		{"reissued", nil, ack{}, []ack{{3, "c", "h3"}}, 2}, // not above 3, and twice
		{"committed for another", nil, ack{4, "x", "hx"}, []ack{{4, "c", "h3"}}, 1},
		{"committed, same holder", nil, ack{4, "x", "hx"}, []ack{{4, "x", "hx"}}, 0},
		{"shown, then granted again", []ack{{5, "s", "h9"}}, ack{}, []ack{{5, "s", "h3"}}, 1},
		{"shown, then above it", []ack{{5, "s", "h9"}}, ack{}, []ack{{6, "s", "h3"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTokenLog()
			l.add(0, first)
			l.addShown(tc.shown)
			if tc.unacked.tok != 0 {
				l.unacked[tc.unacked.tok] = tc.unacked
			}
			l.add(1, tc.next)
			if len(l.violations) != tc.want {
				t.Errorf("%d violations %q, want %d", len(l.violations), l.violations, tc.want)
			}
		})
	}
}
