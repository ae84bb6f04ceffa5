package sqlite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// TestEpochOtherOpenerProcesses: issue 19 item 6 with real processes. A
// dead holder's 1 s lease, taken by this process on the host's clock, ends
// while `picket ls`-like openers in a time namespace whose boot clock reads
// an hour more (unshare -T --boottime 3600) come and go every 200 ms: each
// is refused at Open (ErrOtherEpoch) and touches nothing. Before, each one
// moved the file to its epoch and this process moved it back, each switch
// restarting every lease's full TTL: the lease never ended. Mutant:
// controls/epoch-openers.
func TestEpochOtherOpenerProcesses(t *testing.T) {
	wrap := unshareCmd(t, "a time namespace (unshare -T) needs CAP_SYS_ADMIN", "-T", "--boottime", "3600")
	s := mustOpen(t)
	ctx := ctxT(t)
	const ttl = time.Second
	start := time.Now()
	if _, err := s.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "dead", TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	var answers []string
	freed := time.Duration(0)
	for time.Since(start) < 4*time.Second {
		o := startOpener(t, s.Path(), wrap)
		answers = append(answers, o.opened)
		if o.refused() == "" {
			answers = append(answers, o.do("list"))
		}
		o.stop()
		if _, err := s.Get(ctx, "job"); errors.Is(err, lease.ErrNotFound) {
			freed = time.Since(start)
			break
		} else if err != nil {
			t.Fatalf("Get: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d openers in the time namespace; first said %q", len(answers), answers[0])
	if freed == 0 {
		t.Fatalf("the dead holder's %v lease was still live %v after its grant, with openers in another time namespace coming and going: %q",
			ttl, time.Since(start).Round(time.Millisecond), answers)
	}
	t.Logf("the lease ended %v after its grant", freed.Round(time.Millisecond))
	for _, a := range answers {
		if !strings.HasPrefix(a, "open-error other-epoch: ") {
			t.Errorf("an opener in another time namespace said %q; want it refused with ErrOtherEpoch", a)
			break
		}
	}
}
