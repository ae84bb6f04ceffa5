package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// Config is what a test asks of the store it opens.
type Config struct {
	// Clock is the store's clock. Nil means the store's own real clock.
	Clock *Clock

	// LockDelay is how long a name stays unavailable after a lease on it
	// expires (not after a clean release). Zero turns lock-delay off.
	LockDelay time.Duration
}

// Harness opens stores for the suite.
type Harness struct {
	// Open returns a new, empty store configured by cfg. It registers the
	// store's cleanup (Close, removing files) with t.Cleanup and fails t if
	// the store cannot be opened.
	Open func(t testing.TB, cfg Config) lease.Store

	// RealTime, when set, says the store runs on a clock the suite cannot
	// move (it ignores Config.Clock): the rules about expiry then run on
	// real time (see RealTime).
	RealTime *RealTime

	// LoseAnswer opens a new, empty store as Open does (lock-delay off, the
	// store's real clock) and returns with it lose, which runs write (one
	// write on that store) so that the store takes the write but write's
	// caller cannot learn its outcome: write gets a context that ends while
	// the store holds the write, and once write has returned the store is
	// let go on (to commit it or not). lose returns write's error. It must
	// be a real way to lose the answer (a held write lock, a connection that
	// stops carrying answers), not a stub. The UnknownOutcome test uses it.
	//
	// A store that can lose a write's answer sets it; a store whose every
	// write answers sets OutcomeAlwaysKnown instead (storage/memory). One of
	// the two must be set.
	LoseAnswer func(t *testing.T) (st lease.Store, lose func(write func(ctx context.Context) error) error)

	// OutcomeAlwaysKnown says that the store always knows whether a write
	// was done, so that none of its errors matches lease.ErrUnknown.
	OutcomeAlwaysKnown bool
}

// Run runs every conformance test against stores opened by h.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("leasetest: Harness.Open is nil")
	}
	s := suite{h: h}
	tests := s.tests()
	if h.RealTime != nil {
		tests = s.realTimeTests()
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

type suite struct{ h Harness }

type namedTest struct {
	name string
	run  func(t *testing.T)
}

// tests lists the subtests in the order they run: the store rules first, on
// the fake clock, then waiting and contention, then the Manager on the real
// clock.
func (s suite) tests() []namedTest {
	return []namedTest{
		{"FreshGrantTokens", s.testFreshGrantTokens},
		{"HeldByAnother", s.testHeldByAnother},
		{"SameHolderReacquire", s.testSameHolderReacquire},
		{"ReacquireAfterExpiry", s.testReacquireAfterExpiry},
		{"RenewKeepsToken", s.testRenewKeepsToken},
		{"RenewExtendsExpiry", s.testRenewExtendsExpiry},
		{"Lost", s.testLost},
		{"ReleaseFreesAtOnce", s.testReleaseFreesAtOnce},
		{"Expiry", s.testExpiry},
		{"WallClockJumps", s.testWallClockJumps},
		{"LockDelay", s.testLockDelay},
		{"LockDelayPerRequest", s.testLockDelayPerRequest},
		{"Get", s.testGet},
		{"List", s.testList},
		{"ListPages", s.testListPages},
		{"Bounds", s.testBounds},
		{"Invalid", s.testInvalid},
		{"WaitWokenByRelease", s.testWaitWokenByRelease},
		{"WaitNoticesExpiry", s.testWaitNoticesExpiry},
		{"WaitRunsOut", s.testWaitRunsOut},
		{"WaitCancelled", s.testWaitCancelled},
		{"Contention", s.testContention},
		{"WatchFirstRead", s.testWatchFirstRead},
		{"WatchNoChangeMissed", s.testWatchNoChangeMissed},
		{"WatchWoken", s.testWatchWoken},
		{"WatchExpiry", s.testWatchExpiry},
		{"WatchCancelled", s.testWatchCancelled},
		{"Manager", s.testManager},
		{"Revoke", s.testRevoke},
		{"RevokeWakesWaiter", s.testRevokeWakesWaiter},
		{"RevokedHolderFenced", s.testRevokedHolderFenced},
		{"RevokeEndsHandle", s.testRevokeEndsHandle},
		{"History", s.testHistory},
		{"UnknownOutcome", s.testUnknownOutcome},
	}
}

// open returns a store on a new fake clock, and that clock.
func (s suite) open(t *testing.T, lockDelay time.Duration) (lease.Store, *Clock) {
	t.Helper()
	clk := NewClock()
	st := s.h.Open(t, Config{Clock: clk, LockDelay: lockDelay})
	if st == nil {
		t.Fatal("leasetest: Harness.Open returned nil")
	}
	return st, clk
}

// openReal returns a store on its own real clock.
func (s suite) openReal(t *testing.T) lease.Store {
	t.Helper()
	st := s.h.Open(t, Config{})
	if st == nil {
		t.Fatal("leasetest: Harness.Open returned nil")
	}
	return st
}
