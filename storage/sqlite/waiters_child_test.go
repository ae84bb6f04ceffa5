package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// The children of the cross-process waiter tests. PICKET_TEST_WORKERS is
// the number of goroutines of a "hot" child, PICKET_TEST_HOLD how long each
// grant is held (a duration), PICKET_TEST_WAIT a "wait-once" child's Wait.

// monoNow reads CLOCK_MONOTONIC, which every process on the host shares,
// in nanoseconds.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// grantRecord is one grant of the hot name: its token, when Acquire
// returned it and when its Release was sent (CLOCK_MONOTONIC), and which
// process had it.
type grantRecord struct {
	tok            token.Token
	granted, freed int64
	proc           string
}

func (r grantRecord) String() string {
	return fmt.Sprintf("grant %d %d %d", r.tok, r.granted, r.freed)
}

// hotLoop acquires and releases the name "hot" from workers goroutines
// until d has passed (or ctx ends), each waiting up to 2 s per try and
// holding each grant for hold, and calls out with every grant once it is
// released.
func hotLoop(ctx context.Context, s *sqlite.Store, id string, workers int, hold, d time.Duration, out func(grantRecord)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		holder := fmt.Sprintf("%s-%d", id, w)
		wg.Go(func() {
			for ctx.Err() == nil {
				g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: holder, Owner: id, TTL: time.Minute, Wait: 2 * time.Second})
				if errors.Is(err, lease.ErrHeld) || ctx.Err() != nil {
					if ctx.Err() != nil && err == nil { // granted as the time ran out
						_ = s.Release(context.Background(), lease.ReleaseRequest{Name: "hot", Holder: holder, Token: g.Token})
					}
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				r := grantRecord{tok: g.Token, granted: monoNow(), proc: id}
				if hold > 0 {
					time.Sleep(hold)
				}
				r.freed = monoNow()
				if err := s.Release(context.Background(), lease.ReleaseRequest{Name: "hot", Holder: holder, Token: g.Token}); err != nil {
					errs <- fmt.Errorf("release %d: %w", g.Token, err)
					return
				}
				out(r)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func waiterChild(ctx context.Context, s *sqlite.Store, mode, id string, n int) error {
	switch mode {
	case "hot": // n: milliseconds to run
		workers, _ := strconv.Atoi(os.Getenv("PICKET_TEST_WORKERS"))
		hold, _ := time.ParseDuration(os.Getenv("PICKET_TEST_HOLD"))
		var mu sync.Mutex
		return hotLoop(ctx, s, id, max(workers, 1), hold, time.Duration(n)*time.Millisecond, func(r grantRecord) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Println(r)
		})
	case "wait-once": // n rounds: wait for "hot", say when granted, release once another waits
		wait, err := time.ParseDuration(os.Getenv("PICKET_TEST_WAIT"))
		if err != nil {
			return err
		}
		for range n {
			g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "waiter-" + id, Owner: id, TTL: time.Minute, Wait: wait})
			if err != nil {
				return err
			}
			fmt.Printf("granted %d %d\n", g.Token, monoNow())
			// Hold the name until the other process queues for it (at most
			// 10 s), so that the rounds alternate.
			for deadline := time.Now().Add(10 * time.Second); sqlite.Waiting(s, "hot") < 1 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if err := s.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: "waiter-" + id, Token: g.Token}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// parseGrants reads the "grant" lines of a hot child's output.
func parseGrants(out []byte, proc string) (recs []grantRecord, other []string) {
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r grantRecord
		if _, err := fmt.Sscanf(line, "grant %d %d %d", &r.tok, &r.granted, &r.freed); err == nil {
			r.proc = proc
			recs = append(recs, r)
			continue
		}
		if line != "ready" && line != "" {
			other = append(other, line)
		}
	}
	return recs, other
}
