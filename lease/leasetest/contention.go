package leasetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// testContention: many goroutines acquire and release a few names, waiting
// for each other. At no moment do two of them hold the same name; every grant
// has its own token, the tokens are consecutive, and each goroutine sees its
// tokens strictly increase. The fake clock is frozen, so nothing expires:
// mutual exclusion comes from the store alone.
func (s suite) testContention(t *testing.T) {
	goroutines, rounds := 16, 50
	if testing.Short() {
		rounds = 10
	}
	if s.h.RealTime != nil {
		// A store on real time is a cluster: each hand-over is several
		// round trips through consensus.
		goroutines, rounds = 8, 5
	}
	leaseNames := []string{"contention/a", "contention/b", "contention/c"}
	st, _ := s.open(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	var (
		mu     sync.Mutex
		held   = map[string]string{} // name -> holder, as the test sees it
		tokens = map[token.Token]string{}
		wg     sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			var last token.Token
			for i := range rounds {
				name := leaseNames[(g+i)%len(leaseNames)]
				req := request(name, holderName(g, i), time.Minute)
				req.Wait = lease.MaxWait
				got, err := st.Acquire(ctx, req)
				if err != nil {
					t.Errorf("goroutine %d round %d: Acquire(%q): %v", g, i, name, err)
					return
				}
				mu.Lock()
				if other, ok := held[name]; ok {
					t.Errorf("%q granted to %s while %s holds it", name, req.Holder, other)
				}
				held[name] = req.Holder
				if other, ok := tokens[got.Token]; ok {
					t.Errorf("token %d granted twice: to %s and %s", got.Token, other, req.Holder)
				}
				tokens[got.Token] = req.Holder
				mu.Unlock()
				if got.Token <= last {
					t.Errorf("goroutine %d: token %d after %d", g, got.Token, last)
				}
				last = got.Token

				mu.Lock()
				delete(held, name) // before the release: after it, the next holder may come in
				mu.Unlock()
				if err := st.Release(ctx, lease.ReleaseRequest{Name: name, Holder: req.Holder, Token: got.Token}); err != nil {
					t.Errorf("goroutine %d round %d: Release(%q): %v", g, i, name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	lo, hi := token.Max, token.Token(0)
	for tok := range tokens {
		lo, hi = min(lo, tok), max(hi, tok)
	}
	if n := goroutines * rounds; len(tokens) != n || int(hi-lo)+1 != n && s.h.RealTime == nil {
		t.Errorf("%d grants got %d distinct tokens from %d to %d, want %d consecutive ones", n, len(tokens), lo, hi, n)
	}
	if infos, err := lease.ListAll(ctx, st, "contention/"); err != nil || len(infos) != 0 {
		t.Errorf("after every release List = %v, %v; want nothing", names(infos), err)
	}
}
