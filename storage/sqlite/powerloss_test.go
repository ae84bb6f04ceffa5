package sqlite_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
	"github.com/picketlock/picket/token"
)

// TestPowerLoss: the store's file lives on faultfs, which keeps only what
// was synced. A child process grants from several goroutines; at a random
// moment it is killed and the power is lost (every unsynced write and
// directory change undone); the next child opens the file as it was left.
// 50 cycles (10 with -short, 500 with PICKET_SOAK=1). Checked: each child
// finds the file intact (PRAGMA integrity_check), its tokens exceed every
// token acknowledged before the power loss, no token is acknowledged twice,
// and at the end every acknowledged grant is in the file.
//
// The control runs the same cycles with the writer at synchronous=NORMAL (a
// naive durability: WAL frames reach the disk only at a checkpoint) and must
// be caught reissuing tokens.
func TestPowerLoss(t *testing.T) {
	cycles, budget := 50, 90*time.Second
	switch {
	case soak():
		cycles, budget = 500, 20*time.Minute
	case testing.Short():
		cycles = 10
	}
	t.Run("full", func(t *testing.T) {
		log, lost := powerLossCycles(t, "", cycles, budget)
		log.report(t)
		if log.acks == 0 {
			t.Fatal("no grant was acknowledged")
		}
		if lost > 0 {
			t.Errorf("%d acknowledged grants are not in the file after the power losses", lost)
		}
	})
	t.Run("control-synchronous-normal", func(t *testing.T) {
		log, lost := powerLossCycles(t, "NORMAL", min(cycles, 20), budget)
		if len(log.violations) == 0 || lost == 0 {
			t.Errorf("synchronous=NORMAL was not caught: %d violations, %d acknowledged grants lost", len(log.violations), lost)
		}
		for i, v := range log.violations {
			if i == 3 {
				break
			}
			t.Logf("caught, as it must be: %s", v)
		}
	})
}

// powerLossCycles runs the cycles with the writer at synchronous mode ("":
// the store's own FULL) and returns the checked tokens and the number of
// acknowledged grants missing from the file at the end.
func powerLossCycles(t *testing.T, mode string, cycles int, budget time.Duration) (*tokenLog, int) {
	ffs := faultfs.StartT(t)
	path := filepath.Join(ffs.Dir(), "picket.db")
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	log := newTokenLog()
	c := 0
	for ; c < cycles && ctx.Err() == nil; c++ {
		cmd, ready, finish := startFault(t, ctx, "power", path, strconv.Itoa(c), "PICKET_TEST_SYNC="+mode)
		if err := ready(); err != nil {
			t.Fatalf("cycle %d: %v", c, err)
		}
		time.Sleep(time.Duration(5+rand.IntN(60)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		run := finish()
		ffs.PowerLoss()
		if !run.killed || len(run.other) > 0 {
			t.Fatalf("cycle %d: killed %v, said %q", c, run.killed, run.other)
		}
		if run.integrity != "ok" {
			log.violate("cycle %d: integrity_check after the power loss before: %q", c, run.integrity)
		}
		log.add(c, run.acks)
	}
	// One more child opens the file after the last power loss.
	cmd, ready, finish := startFault(t, ctx, "power", path, "last", "PICKET_TEST_SYNC="+mode)
	if err := ready(); err != nil {
		t.Fatalf("after the last cycle: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	last := finish()
	if last.integrity != "ok" {
		log.violate("integrity_check after the last power loss: %q", last.integrity)
	}
	log.add(c, last.acks)

	_, rows := leaseRows(t, path)
	lost := 0
	for _, a := range log.seen {
		if got, ok := rows[a.name]; !ok || got.tok != a.tok || got.holder != a.holder {
			lost++
		}
	}
	var highest token.Token
	for _, a := range log.seen {
		highest = max(highest, a.tok)
	}
	s := ffs.Stats()
	t.Logf("synchronous=%s: %d power losses, %d acknowledged grants (highest token %d), %d violations, %d acknowledged grants lost; fs: %d file syncs, %d directory syncs, %d bytes and %d names undone",
		orFull(mode), s.PowerLosses, log.acks, highest, len(log.violations), lost, s.Syncs, s.DirSyncs, s.LostBytes, s.LostFiles)
	if s.LostBytes == 0 {
		t.Errorf("no power loss lost anything: the test exercised nothing")
	}
	return log, lost
}

func orFull(mode string) string {
	if mode == "" {
		return "FULL"
	}
	return mode
}
