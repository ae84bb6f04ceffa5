package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// TestCrashPoints: a child process granting from several goroutines kills
// itself with SIGKILL at a named point of its writer goroutine's Nth batch:
// "before-commit" (the batch's statements ran, COMMIT not sent) or
// "after-commit" (COMMIT returned, no caller answered). 200 restarts over
// two files, the points taking turns (40 with -short, 2,000 with
// PICKET_SOAK=1), bounded in time. After every crash:
//   - every grant the child acknowledged is in the file, with its holder;
//   - the counter equals the highest token in the file (nothing
//     half-written: a batch is all there or not at all);
//   - after "after-commit", the crashed batch's grants are in the file,
//     never acknowledged; their tokens are never acknowledged to anyone
//     later;
//   - the next child's tokens exceed everything acknowledged and committed
//     before;
//   - every grant in the file has its grant event in the history, and the
//     history has no grant the file does not (the events are written in
//     the batch's transaction: mutant history-after-commit).
//
// At the end the file passes PRAGMA integrity_check.
func TestCrashPoints(t *testing.T) {
	restarts, budget := 200, 90*time.Second
	switch {
	case soak():
		restarts, budget = 2000, 20*time.Minute
	case testing.Short():
		restarts = 40
	}
	// Two files, each with its own series of children, side by side: the
	// children spend most of their short lives starting.
	for lane := range 2 {
		t.Run(fmt.Sprintf("file-%d", lane), func(t *testing.T) {
			t.Parallel()
			crashLane(t, restarts/2, budget)
		})
	}
}

func crashLane(t *testing.T, restarts int, budget time.Duration) {
	path := filepath.Join(t.TempDir(), "picket.db")
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	points := []string{"before-commit", "after-commit"}
	log := newTokenLog()
	var committed token.Token // the counter after the last crash
	crashes := map[string]int{}
	unackedAtCommit := 0
	r := 0
	for ; r < restarts && ctx.Err() == nil; r++ {
		point := points[r%len(points)]
		n := 1 + rand.IntN(8)
		_, ready, finish := startFault(t, ctx, "crash", path, strconv.Itoa(r),
			"PICKET_TEST_CRASH_POINT="+point, "PICKET_TEST_CRASH_BATCH="+strconv.Itoa(n))
		if err := ready(); err != nil {
			if ctx.Err() != nil { // the time budget ran out while this child started
				finish()
				break
			}
			t.Fatalf("restart %d: %v", r, err)
		}
		run := finish()
		if !run.killed || len(run.other) > 0 || run.integrity != "ok" {
			t.Fatalf("restart %d (%s, batch %d): killed %v, integrity %q, said %q", r, point, n, run.killed, run.integrity, run.other)
		}
		crashes[point]++
		for _, a := range run.acks {
			if a.tok <= committed {
				log.violate("restart %d: token %d acknowledged, but the file held counter %d before this child started", r, a.tok, committed)
			}
		}
		log.add(r, run.acks)

		counter, rows := leaseRows(t, path)
		var highestRow token.Token
		acked := map[string]bool{}
		for _, a := range run.acks {
			acked[a.name] = true
			if got, ok := rows[a.name]; !ok || got != a {
				log.violate("restart %d: acknowledged grant %+v is not in the file after the crash (found %+v, %v)", r, a, got, ok)
			}
		}
		unacked := 0 // new since the last crash
		for _, row := range rows {
			highestRow = max(highestRow, row.tok)
			_, isAcked := log.seen[row.tok]
			if _, known := log.unacked[row.tok]; !isAcked && !known {
				log.unacked[row.tok] = row
				unacked++
			}
		}
		events := historyGrants(t, path) // history_crash_test.go
		for _, row := range rows {
			if !events[row.tok] {
				log.violate("restart %d (%s): the grant of token %d is in the file, its event is not in the history", r, point, row.tok)
			}
		}
		for tok := range events {
			if tok > counter {
				log.violate("restart %d (%s): the history has a grant of token %d above the counter %d", r, point, tok, counter)
			}
		}
		if counter != highestRow {
			log.violate("restart %d (%s): counter %d but the highest token in the file is %d", r, point, counter, highestRow)
		}
		if counter < committed {
			log.violate("restart %d: the counter went back from %d to %d", r, committed, counter)
		}
		if point == "after-commit" {
			if counter <= log.highest || unacked == 0 {
				log.violate("restart %d: killed after a commit, but the counter %d is not above the acknowledged %d, or no grant of the batch is in the file (%d new unacknowledged)",
					r, counter, log.highest, unacked)
			}
			unackedAtCommit += unacked
		}
		committed = counter
		if len(log.violations) > 0 {
			break
		}
	}
	log.report(t)
	t.Logf("%d restarts (%v), %d acknowledged grants, %d committed but never acknowledged (%d of them at after-commit crashes), counter %d",
		r, crashes, log.acks, len(log.unacked), unackedAtCommit, committed)
	if crashes["before-commit"] == 0 || crashes["after-commit"] == 0 || log.acks == 0 {
		t.Fatalf("the points were not both exercised: %v, %d grants", crashes, log.acks)
	}

	s := mustOpenPath(t, path)
	if g := acquire(t, s, "after-crashes", "h", time.Minute); g.Token <= committed {
		t.Errorf("after the crashes: token %d, want above %d", g.Token, committed)
	}
	var check string
	if err := rawDB(t, path).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v; want ok", check, err)
	}
}
