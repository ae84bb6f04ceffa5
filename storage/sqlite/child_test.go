package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// The crash and multi-process tests re-execute the test binary as a child
// process (internal/childtest): the registered function's name says what
// the child does, PICKET_TEST_DB the file, PICKET_TEST_N how many rounds,
// PICKET_TEST_ID the child's name. A child of runChild prints one line per
// acknowledged token ("token N"), "ready" once its store is open, and
// "error ..." for anything unexpected.
func init() {
	for _, mode := range []string{"shared", "distinct", "grant-loop", "hot", "wait-once", "watch", "watch-stamp"} {
		childtest.Register(mode, func() int { return runChild(mode) })
	}
}

func TestMain(m *testing.M) { childtest.Main(m) }

func runChild(mode string) int {
	path := os.Getenv("PICKET_TEST_DB")
	id := os.Getenv("PICKET_TEST_ID")
	n, _ := strconv.Atoi(os.Getenv("PICKET_TEST_N"))
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return 1
	}
	defer s.Close()
	fmt.Println("ready")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch mode {
	case "shared", "distinct":
		err = childAcquireRelease(ctx, s, mode, id, n)
	case "grant-loop":
		err = childGrantLoop(ctx, s, id)
	case "hot", "wait-once":
		err = waiterChild(ctx, s, mode, id, n) // waiters_child_test.go
	case "watch":
		err = watchChild(ctx, s, n) // watch_process_test.go
	case "watch-stamp":
		err = watchStampChild(ctx, s) // watch_bench_test.go
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	return 0
}

// childAcquireRelease acquires and releases n times, one name shared with
// the other children (waiting for it) or a name of its own per round.
func childAcquireRelease(ctx context.Context, s *sqlite.Store, mode, id string, n int) error {
	holder := "holder-" + id
	for i := range n {
		name := "shared"
		if mode == "distinct" {
			name = fmt.Sprintf("distinct/%s/%d", id, i)
		}
		req := lease.AcquireRequest{Name: name, Holder: holder, Owner: id, TTL: time.Minute, Wait: lease.MaxWait}
		var g lease.Grant
		var err error
		for try := 0; try < 10; try++ { // the other child may hold it for a whole MaxWait
			if g, err = s.Acquire(ctx, req); !errors.Is(err, lease.ErrHeld) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("round %d: acquire %q: %w", i, name, err)
		}
		fmt.Printf("token %d\n", g.Token)
		if err := s.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token}); err != nil {
			return fmt.Errorf("round %d: release %q: %w", i, name, err)
		}
		if mode == "shared" {
			// Give the other child, waiting in its backoff, a chance to
			// come in between: otherwise one child mostly runs first.
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		}
	}
	return nil
}

// childGrantLoop grants new leases until it is killed, printing each token
// once Acquire has returned it.
func childGrantLoop(ctx context.Context, s *sqlite.Store, id string) error {
	for i := 0; ; i++ {
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprintf("crash/%s/%d", id, i), Holder: "h", TTL: time.Minute})
		if err != nil {
			return err
		}
		if _, err := fmt.Printf("token %d\n", g.Token); err != nil {
			return err
		}
	}
}
