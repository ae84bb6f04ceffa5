package sqlite_test

import (
	"errors"
	"testing"

	"github.com/picketlock/picket/storage/sqlite"
)

// TestEpochUnreadable: two openers that cannot read their clock's epoch
// (no /proc, as in a chroot or a container without it), one of them in a
// time namespace whose boot clock reads an hour more, both refuse to open
// (ErrNoEpoch), instead of both taking the empty epoch, sharing it without
// sharing a clock, and granting a live 10-minute lease to a second holder
// at once (issue 19 item 3). Mutant: controls/epoch-unreadable.
func TestEpochUnreadable(t *testing.T) {
	path := t.TempDir() + "/picket.db"
	host := startOpener(t, path, unshareCmd(t, "mount and time namespaces", "-m"), "PICKET_TEST_NO_PROC=1")
	hostAnswer := host.do("acquire job 10m")
	ns := startOpener(t, path, unshareCmd(t, "mount and time namespaces", "-m", "-T", "--boottime", "3600"), "PICKET_TEST_NO_PROC=1")
	nsAnswer := ns.do("acquire job 10m")
	t.Logf("host: %s / %s; namespace: %s / %s", host.opened, hostAnswer, ns.opened, nsAnswer)
	if a, b := granted(hostAnswer), granted(nsAnswer); a != 0 && b != 0 {
		t.Fatalf("job was granted twice, tokens %d and %d: a 10-minute lease handed to a second holder at once", a, b)
	}
	for _, o := range []*opener{host, ns} {
		if o.refused() != "no-epoch" {
			t.Errorf("an opener without its clock's epoch said %q; want ErrNoEpoch", o.opened)
		}
	}
}

// TestEpochUnreadableError: the system clock of this process reads its
// epoch, and a clock whose epoch could not be read is refused.
func TestEpochUnreadableError(t *testing.T) {
	if sqlite.SystemClock().Epoch() == "" {
		t.Fatal("this process's system clock has no epoch")
	}
	_, err := sqlite.Open(t.TempDir()+"/picket.db", sqlite.WithClock(sqlite.UnreadableClock()))
	if !errors.Is(err, sqlite.ErrNoEpoch) {
		t.Fatalf("Open with an unreadable epoch: %v; want ErrNoEpoch", err)
	}
}
