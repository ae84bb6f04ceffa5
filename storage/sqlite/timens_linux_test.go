package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

func init() { childtest.Register("timens", timensChild) }

// timensChild runs in a time namespace whose boot clock reads an hour more
// (under unshare -T --boottime 3600): it opens PICKET_TEST_DB, says its
// clock epoch, and tries to take "job" at once:
//
//	epoch <epoch>
//	held | granted <token> | refused other-epoch | error <err>
//
// With PICKET_TEST_LEGACY_EPOCH=1 it uses the system clock as it was
// before time namespaces counted (the boot id alone): the control.
func timensChild() int {
	clock := sqlite.SystemClock()
	if os.Getenv("PICKET_TEST_LEGACY_EPOCH") == "1" {
		clock = sqlite.LegacySystemClock()
	}
	fmt.Printf("epoch %s\n", clock.Epoch())
	s, err := sqlite.Open(os.Getenv("PICKET_TEST_DB"), sqlite.WithClock(clock))
	if errors.Is(err, sqlite.ErrOtherEpoch) {
		fmt.Println("refused other-epoch")
		return 0
	}
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return 1
	}
	defer s.Close()
	printAcquire(context.Background(), s, "job", time.Minute) // opener_linux_test.go
	return 0
}

// timensTry holds "job" for 10 minutes on the host's clock, then runs a
// child under `unshare -T --boottime 3600` on the same file, and returns
// what the child said.
func timensTry(t *testing.T, legacy bool) (epoch, result string) {
	t.Helper()
	requireRoot(t, "a time namespace (unshare -T) needs CAP_SYS_ADMIN")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("PICKET_REQUIRE_ROOT") == "1" {
			t.Fatalf("unshare (util-linux) not found: %v", err)
		}
		t.Skipf("unshare (util-linux) not found: %v", err)
	}
	s := mustOpen(t)
	if _, err := s.Acquire(ctxT(t), lease.AcquireRequest{Name: "job", Holder: "host", Owner: "host", TTL: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	o := childtest.Options{Wrap: []string{unshare, "-T", "--boottime", "3600"}, Env: []string{"PICKET_TEST_DB=" + s.Path()}}
	if legacy {
		o.Env = append(o.Env, "PICKET_TEST_LEGACY_EPOCH=1")
	}
	cmd := childtest.Command(t, ctx, "timens", o)
	cmd.Stderr = nil // CombinedOutput takes it
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if e, ok := strings.CutPrefix(line, "epoch "); ok {
			epoch = e
		} else if line == "held" || strings.HasPrefix(line, "granted ") || strings.HasPrefix(line, "error ") || strings.HasPrefix(line, "refused ") {
			result = line
		}
	}
	t.Logf("host epoch %q; child epoch %q, child: %s", sqlite.SystemClock().Epoch(), epoch, result)
	return epoch, result
}

// TestEpochTimeNamespace: a real process in a time namespace whose boot
// clock reads an hour more (unshare -T --boottime 3600), on the same host
// and file, is not granted a name another process holds for 10 more
// minutes: its epoch names the offset, so it is refused at Open while the
// other opener lives (issue 19 item 6; before it, its first batch applied
// the reboot rule: issue 8 item 2).
func TestEpochTimeNamespace(t *testing.T) {
	epoch, result := timensTry(t, false)
	if want := sqlite.SystemClock().Epoch() + " boottime 3600 0"; epoch != want {
		t.Errorf("the child's epoch is %q, want %q", epoch, want)
	}
	if result != "refused other-epoch" {
		t.Fatalf("the child in the time namespace said %q, want refused other-epoch", result)
	}
}

// TestEpochTimeNamespaceControl: a child whose epoch is the boot id alone
// (the old system clock) is granted the held name: the check catches it.
func TestEpochTimeNamespaceControl(t *testing.T) {
	_, result := timensTry(t, true)
	if !strings.HasPrefix(result, "granted ") {
		t.Fatalf("the old clock's child said %q; the control expects the double grant", result)
	}
}
