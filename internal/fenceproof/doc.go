// Package fenceproof is the SIGSTOP proof of a fencing helper, shared by every
// home of data picket fences (token's SQL dialects and files, the object-store
// and Redis modules): real worker processes take turns holding one picket
// lease on a SQLite file and write to the home with their tokens, while the
// parent freezes holders (SIGSTOP) for longer than their TTL and thaws them
// (SIGCONT) after another holder has written. A frozen holder wakes believing
// it still holds the lease and writes anyway — on purpose: that is the gap no
// client-side check can close, and the one a fence must.
//
// A home's test registers a child function that builds its writer and hands
// it to Worker, then runs the proof with Run and judges it with Check:
//
//	func init() {
//		childtest.Register("redis-proof", func() int {
//			c := redis.NewClient(...)          // from the child's environment
//			return fenceproof.Worker(func(ctx context.Context, t token.Token, v string) error {
//				return fence.Set(ctx, c, "proof", t, v)
//			})
//		})
//	}
//
//	func TestSIGSTOPProof(t *testing.T) {
//		fenceproof.Check(t, fenceproof.Run(t, fenceproof.Plan{Child: "redis-proof", Env: env}))
//	}
//
// (TestMain must be childtest.Main.)
//
// # What is judged
//
// Every worker stamps each write with CLOCK_MONOTONIC, one clock for every
// process of the host, before it sends the write and after the answer came.
// A write is stale if the home accepted it although, before it was sent, the
// home had already acknowledged a write with a higher token: the newer holder
// wrote, and the paused one overwrote it. The fence must refuse exactly
// those (with an error matching token.ErrStale); a write with a lower token
// that starts before any higher one was acknowledged may be admitted, since
// no newer holder had reached the data yet. Check fails the test on a stale
// write, on a run in which no late write was refused at all (the proof did
// not exercise the fence), and on any other error.
//
// The control of each home's proof is a mutant of its helper that writes
// without the compare: the same run then counts stale writes, and Check
// fails.
package fenceproof
