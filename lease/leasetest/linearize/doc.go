// Package linearize checks that a lease.Store behaved like one correct store
// that did one thing at a time: it records what concurrent callers asked and
// were answered, and has porcupine (github.com/anishathalye/porcupine, the
// linearizability checker behind etcd's robustness tests) search for an order
// of those calls that a correct store could have produced, each call taking
// effect at one instant between its start and its answer.
//
// # The idea
//
// A test cannot see inside a store, only calls and answers, each with the time
// it was made and the time it came back. If every answer fits one sequential
// run of the lease contract, in an order that respects real time (a call that
// came back before another began comes first), the store was linearizable; if
// no such order exists, some answer broke the contract, and a lock service
// whose answers break the contract breaks its promise.
//
// The sequential contract (the model) checks:
//
//   - tokens: a fresh grant carries a token greater than every token
//     acknowledged before the call began, for any name (never reissued,
//     never backwards); a token is never seen on a second name or holder
//     (only the same holder's re-acquire of its live lease gets its token
//     back), and on one name each fresh grant's token is above the last;
//   - one live holder per name, judged by the store's own reports: a grant
//     reports its deadline (Grant.Expires), and until that deadline (plus the
//     lock-delay) nobody else gets the name, while Get and a HeldError must
//     report exactly that lease;
//   - renew needs the live holder with its token and keeps the token; release
//     frees the name at once; an expired lease cannot be renewed or released;
//   - the fenced key-value table: a put is accepted if and only if its token
//     is at least the highest the key has seen, a refusal reports that
//     highest token, and a get returns the highest token and its value.
//
// # Time
//
// Expiry is decided by the store's clock, so the model works in store time.
// A Recorder reads the store's clock (the same lease.Clock the store was
// given, normally a leasetest.Clock) when a call starts and when it returns,
// and turns the wall-clock deadlines a store reports into store time. Each
// call is placed at the earliest store time its answer allows (a grant
// reports its own instant: its deadline minus its TTL). That is exact when the
// clock does not move while calls are outstanding: advance it between phases,
// after every call has returned and the store has finished whatever work a
// cancelled caller left behind (then call Recorder.Settle). Advanced while
// calls are in flight, the model may place a call whose outcome is unknown
// at the wrong time, and misjudge the history either way.
//
// # Unknown outcomes
//
// A call that ends with its context's error, a transport error or any error
// other than a definite answer (held, lost, not found, stale) may or may not
// have taken effect. It is recorded as porcupine expects: its return time is
// the end of time, and the model lets it take effect at any point after it
// began, or never. A grant nobody saw has a token nobody knows; the first
// answer that shows it (a Get, the holder's re-acquire) fixes it. A read
// whose outcome is unknown tells nothing and is left out.
//
// A test that knows the store has finished everything (no call in flight,
// and the store has dealt with what cancelled callers left behind) calls
// Recorder.Settle: the unknown outcomes so far then took effect by that
// moment or never. That catches a store that commits a cancelled call
// later, and keeps the search small.
//
// # Partitions
//
// Checking is NP-hard in general, so the history is cut into independent
// parts that porcupine checks separately: one per lease name (everything
// about who holds it), one per fenced key, and one holding every grant, which
// checks tokens across names. Each grant there carries the highest token
// acknowledged before it began, computed from real time, so the search
// never has to try orders of concurrent grants: a soak history of 16,000
// calls checks in a fraction of a second. Failing names the parts that do
// not check, which says which promise was broken.
//
// # Use
//
//	clk := leasetest.NewClock()
//	st, _ := sqlite.Open(path, sqlite.WithClock(clk))
//	rec := linearize.NewRecorder(clk)
//	c := rec.Client(0, st, st) // one per concurrent caller: its ClientId
//	g, err := c.Acquire(ctx, req)
//	...                // then, with no call in flight: flush the store,
//	rec.Settle()       // and move the clock for the next phase
//	clk.Advance(time.Second)
//	...
//	linearize.Verify(t, rec.Operations(), linearize.Config{}, time.Minute)
//
// Verify fails the test unless porcupine answers Ok. On failure it prints
// each failing part cut to its shortest failing prefix (the call that breaks
// it, the calls placed before it with the model's state, the calls beside
// it), and keeps the history, that report and porcupine's HTML visualization
// in a new directory under $PICKET_ARTIFACTS (or the system's temporary
// directory), whose path it logs; ReadHistory reads a kept history back.
package linearize
