package redisfence_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/redisfence"
)

// TestConcurrentWriters: 16 goroutines, each with a client of its own, take
// rising tokens and write them after a random delay, so that lower tokens
// often arrive after higher ones; 3,200 writes in all. Checked: no write is
// admitted after a higher token's write was acknowledged (the interval
// rule of internal/fenceproof, on this process's monotonic clock), every
// refusal is ErrStale with a higher Highest, some were refused, and at the
// end the key holds the highest admitted token's value and the fence that
// token.
func TestConcurrentWriters(t *testing.T) {
	c, srv := newRedis(t)
	ctx := t.Context()
	type write struct {
		tok        token.Token
		start, end time.Duration
	}
	var (
		next     atomic.Uint64
		mu       sync.Mutex
		admitted []write
		refused  int
		epoch    = time.Now()
		wg       sync.WaitGroup
	)
	for g := range 16 {
		cl := newClient(t, srv.addr)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				tok := token.Token(next.Add(1))
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				start := time.Since(epoch)
				err := redisfence.Set(ctx, cl, "hot", tok, tok.String())
				end := time.Since(epoch)
				mu.Lock()
				var se *token.StaleError
				switch {
				case err == nil:
					admitted = append(admitted, write{tok, start, end})
				case errors.As(err, &se) && se.Highest > tok:
					refused++
				default:
					t.Errorf("token %d: %v", tok, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var top token.Token
	var timed []fenceproof.Timed
	for _, w := range admitted {
		top = max(top, w.tok)
		timed = append(timed, fenceproof.Timed{Token: w.tok, Start: w.start, End: w.end})
	}
	if late := fenceproof.Overtaken(timed); len(late) > 0 {
		t.Fatalf("%d writes admitted after a higher token was acknowledged: %v", len(late), late)
	}
	if refused == 0 {
		t.Fatalf("no write of %d was refused: the test did not race", len(admitted))
	}
	v, err := c.Get(ctx, "hot").Result()
	if err != nil || v != top.String() {
		t.Fatalf("hot = %q, %v; want %q, the highest admitted token", v, err, top.String())
	}
	if h, err := redisfence.Highest(ctx, c, "hot"); err != nil || h != top {
		t.Fatalf("Highest = %d, %v; want %d", h, err, top)
	}
	t.Logf("%d admitted, %d refused as stale; highest %s", len(admitted), refused, strconv.FormatUint(uint64(top), 10))
}
