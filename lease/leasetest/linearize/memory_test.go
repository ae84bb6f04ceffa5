package linearize_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/token"
)

// TestTokenPartitionMemory: checking a long history allocates in
// proportion to it, not to its square. The token partition's state used to
// hold every token seen, and porcupine keeps a state per step of its
// search, so memory grew with the square of the grants (what held 13 GB in
// a soak binary: the top allocator there). Here 10,000 grants, each
// token shown twice (a grant and its holder's re-acquire), must check Ok
// within 512 MB of allocations (the old state allocated so much more that
// porcupine gave up after a minute on twice this history).
func TestTokenPartitionMemory(t *testing.T) {
	const grants = 10000
	const s = time.Second
	b := new(h)
	var at int64
	for i := range grants {
		name := fmt.Sprintf("m/%d", i%3)
		holder := fmt.Sprintf("x%d", i)
		tok := token.Token(i + 1)
		b.add(0, at, at+1, t0, acq(name, holder, 10*s), granted(tok, holder, 10*s, t0))
		b.add(0, at+2, at+3, t0, acq(name, holder, 10*s), granted(tok, holder, 10*s, t0))
		b.add(0, at+4, at+5, t0, rel(name, holder, tok), result(linearize.OK))
		at += 6
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := linearize.Check(b.ops, linearize.Config{}, time.Minute)
	runtime.ReadMemStats(&after)
	if got != porcupine.Ok {
		t.Fatalf("Check = %s, want Ok", got)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d operations checked with %d MB allocated", len(b.ops), alloc>>20)
	if alloc > 512<<20 {
		t.Errorf("checking %d operations allocated %d MB, want at most 512 MB", len(b.ops), alloc>>20)
	}
}
