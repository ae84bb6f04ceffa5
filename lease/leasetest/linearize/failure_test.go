package linearize_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/token"
)

// failureTB is a testing.TB whose failures and logs are kept, not reported.
type failureTB struct {
	testing.TB
	errs, logs []string
}

func (f *failureTB) Helper() {}
func (f *failureTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *failureTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// TestVerifyKeepsFailingHistory: when a history does not check, Verify
// prints the failing part cut at the call that breaks it (a second holder
// granted a live lease, the 21st of 40 calls on the name), with the calls
// around it, and keeps the history, that report and porcupine's
// visualization under $PICKET_ARTIFACTS; the kept history reads back and
// fails the same way.
func TestVerifyKeepsFailingHistory(t *testing.T) {
	const s = time.Second
	b := new(h)
	var call int64
	next := func() (int64, int64) { call += 10; return call, call + 5 }
	tok := token.Token(0)
	for i := range 20 { // x and y take "a" in turn
		holder := []string{"x", "y"}[i%2]
		tok++
		c, r := next()
		b.add(i%2, c, r, t0, acq("a", holder, 10*s), granted(tok, holder, 10*s, t0))
		c, r = next()
		b.add(i%2, c, r, t0, rel("a", holder, tok), result(linearize.OK))
	}
	tok++
	c, r := next()
	b.add(0, c, r, t0, acq("a", "x", 10*s), granted(tok, "x", 10*s, t0))
	tok++
	c, r = next()
	b.add(1, c, r, t0, acq("a", "y", 10*s), granted(tok, "y", 10*s, t0)) // the culprit: "a" is x's
	for range 18 {
		c, r = next()
		b.add(2, c, r, t0, get("b"), result(linearize.NotFound))
	}
	dir := t.TempDir()
	t.Setenv(linearize.ArtifactsEnv, dir)

	f := &failureTB{TB: t}
	linearize.Verify(f, b.ops, linearize.Config{}, 10*time.Second)
	if len(f.errs) != 1 {
		t.Fatalf("Verify reported %d failures, want 1: %q", len(f.errs), f.errs)
	}
	msg := f.errs[0]
	t.Log(msg)
	for _, want := range []string{
		`failing parts: ["lease \"a\": Illegal"]`,
		`its first 42 calls by call time check without the last`,
		`culprit: #41 client 1 [420ns, 425ns] acquire("a", y, ttl 10s)`,
		`#40 client 0 [410ns, 415ns] acquire("a", x, ttl 10s)`,
		"held by x (owner \"o-x\") token 21",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report does not contain %q", want)
		}
	}
	if strings.Contains(msg, `get("b")`) {
		t.Error(`the report shows calls of another part (get("b"))`)
	}

	kept, err := filepath.Glob(filepath.Join(dir, "picket-linearize-*"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept directories under $%s: %q, %v; want one", linearize.ArtifactsEnv, kept, err)
	}
	if len(f.logs) != 1 || !strings.Contains(f.logs[0], kept[0]) {
		t.Errorf("Verify logged %q, want the directory %s", f.logs, kept[0])
	}
	for _, name := range []string{"history.json", "history.txt", "failing.txt", "visualization.html"} {
		if fi, err := os.Stat(filepath.Join(kept[0], name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", name, err)
		}
	}
	txt, _ := os.ReadFile(filepath.Join(kept[0], "history.txt"))
	if n := strings.Count(string(txt), "\n"); n != len(b.ops) {
		t.Errorf("history.txt has %d lines, want %d", n, len(b.ops))
	}
	ops, err := linearize.ReadHistory(filepath.Join(kept[0], "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != len(b.ops) {
		t.Fatalf("ReadHistory: %d calls, want %d", len(ops), len(b.ops))
	}
	if got := linearize.Check(ops, linearize.Config{}, 10*time.Second); got != porcupine.Illegal {
		t.Errorf("the kept history checks %s, want Illegal", got)
	}
}

// TestKeptEtcdHandOverHistory: the history TestLinearizableEtcd kept when
// it failed under load (issue 39 item 2; the calls on lin/../c), read back,
// is still Illegal, in that name's part: two acquires that let the name pass
// to a waiter answered "held" by it until their own start, while its lease
// ran for a minute (storage/etcd's TestHandOverToWaiterThatTakesIt).
func TestKeptEtcdHandOverHistory(t *testing.T) {
	ops, err := linearize.ReadHistory(filepath.Join("testdata", "etcd-handover", "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := linearize.Config{LateCommit: true}
	if got := linearize.Check(ops, cfg, 10*time.Second); got != porcupine.Illegal {
		t.Errorf("the kept history of %d calls checks %s, want Illegal", len(ops), got)
	}
	if got, want := linearize.Failing(ops, cfg, 10*time.Second), []string{`lease "lin/../c": Illegal`}; !slices.Equal(got, want) {
		t.Errorf("failing parts %q, want %q", got, want)
	}
	// Without the two answers of the reservation, the rest checks.
	rest := slices.DeleteFunc(slices.Clone(ops), func(op porcupine.Operation) bool {
		out := op.Output.(linearize.Output)
		return out.Result == linearize.Held && out.Expires < 2*time.Second
	})
	if len(rest) != len(ops)-2 {
		t.Fatalf("%d answers of the reservation, want 2", len(ops)-len(rest))
	}
	if got := linearize.Check(rest, cfg, 10*time.Second); got != porcupine.Ok {
		t.Errorf("the kept history without the reservation's answers checks %s, want Ok", got)
	}
}
