package linearize_test

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// checkFile checks the closed store's file against what the callers saw.
// warm is the token granted before the run, after the grant after it.
func (r *cancelRun) checkFile(t *testing.T, path string, warm token.Token, after lease.Grant) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var counter token.Token
	if err := db.QueryRow("SELECT value FROM counter").Scan(&counter); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT name, holder, token FROM leases")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tokens := map[token.Token]string{} // every token seen, acknowledged or in the file, and whose
	for _, c := range r.acked {
		if other, ok := tokens[c.tok]; ok {
			r.problem("token %d acknowledged to %s and %s", c.tok, other, c.holder)
		}
		tokens[c.tok] = c.holder
	}
	for rows.Next() {
		var name, holder string
		var tok token.Token
		if err := rows.Scan(&name, &holder, &tok); err != nil {
			t.Fatal(err)
		}
		switch c, u := r.acked[holder], r.unknown[holder]; {
		case holder == "warm-holder" || holder == "after-holder":
		case c != nil:
			if c.name != name || c.tok != tok {
				r.problem("lease row %q held by %s with token %d; the holder was granted %q with token %d", name, holder, tok, c.name, c.tok)
			}
			if c.released {
				r.problem("lease row %q of %s (token %d) is still in the file after its release was acknowledged", name, holder, tok)
			}
		case u != nil:
			if u.name != name {
				r.problem("lease row %q held by %s, whose cancelled acquire was for %q", name, holder, u.name)
			}
			if other, ok := tokens[tok]; ok {
				r.problem("lease row %q of %s (a cancelled acquire) has token %d, acknowledged to %s", name, holder, tok, other)
			}
			tokens[tok] = holder
		default:
			r.problem("lease row %q held by %s with token %d belongs to no call that was granted or had an unknown outcome", name, holder, tok)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for tok := range tokens {
		if tok > counter {
			r.problem("token %d is above the counter %d", tok, counter)
		}
	}
	// Every token consumed between warm and after went to an acknowledged
	// grant or to a call with unknown outcome.
	consumed := int(after.Token - warm - 1)
	if consumed < len(r.acked) || consumed > len(r.acked)+len(r.unknown) {
		r.problem("%d tokens consumed during the run, by %d acknowledged grants and %d unknown outcomes",
			consumed, len(r.acked), len(r.unknown))
	}
	if counter != after.Token {
		r.problem("counter = %d, want %d (the last grant)", counter, after.Token)
	}
}

// settleGoroutines returns the number of goroutines once it has dropped to
// want, trying for at most two seconds.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); n > want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// hiddenGrant reports every fifth grant as held: the grant is committed,
// and nobody knows.
type hiddenGrant struct {
	*sqlite.Store
	mu sync.Mutex
	n  int
}

func (s *hiddenGrant) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	g, err := s.Store.Acquire(ctx, req)
	if err != nil {
		return g, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n++; s.n%5 == 0 {
		return lease.Grant{}, &lease.HeldError{Name: req.Name, Owner: "nobody", Expires: g.Expires}
	}
	return g, nil
}

// leaky leaves a goroutine behind for every acquire whose context ended.
type leaky struct {
	*sqlite.Store
	stop chan struct{}
}

func (s *leaky) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	g, err := s.Store.Acquire(ctx, req)
	if ctx.Err() != nil {
		go func() { <-s.stop }()
	}
	return g, err
}
