package sqlite_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// TestFenced: a key takes any token not lower than the highest it has seen;
// a lower one is rejected with the highest, and the value stays.
func TestFenced(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	raiseCounter(t, s, token.Max)
	if _, _, err := s.GetFenced(ctx, "report"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("GetFenced of a new key: %v; want ErrNotFound", err)
	}
	steps := []struct {
		value   string
		tok     token.Token
		stale   bool
		wantVal string
		wantTok token.Token
	}{
		{"v5", 5, false, "v5", 5},
		{"v5 again", 5, false, "v5 again", 5}, // the holder writes twice
		{"v7", 7, false, "v7", 7},
		{"v6", 6, true, "v7", 7}, // a stale writer
		{"v1", 1, true, "v7", 7},
		{"", 9, false, "", 9}, // an empty value is a value
		{"max", token.Max, false, "max", token.Max},
	}
	for _, st := range steps {
		err := s.PutFenced(ctx, "report", []byte(st.value), st.tok)
		if st.stale {
			var se *token.StaleError
			if !errors.As(err, &se) || !errors.Is(err, token.ErrStale) {
				t.Fatalf("PutFenced(%q, %d): %v; want a *token.StaleError", st.value, st.tok, err)
			}
			want := token.StaleError{Resource: "report", Token: st.tok, Highest: st.wantTok}
			if diff := cmp.Diff(want, *se); diff != "" {
				t.Errorf("stale error (-want +got):\n%s", diff)
			}
		} else if err != nil {
			t.Fatalf("PutFenced(%q, %d): %v", st.value, st.tok, err)
		}
		v, tok, err := s.GetFenced(ctx, "report")
		if err != nil || string(v) != st.wantVal || tok != st.wantTok || v == nil {
			t.Errorf("after PutFenced(%q, %d): GetFenced = %q, %d, %v; want %q, %d", st.value, st.tok, v, tok, err, st.wantVal, st.wantTok)
		}
	}
}

// TestFencedLargeValue: values up to 1 MiB go in and come out whole.
func TestFencedLargeValue(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	raiseCounter(t, s, 1)
	value := make([]byte, 1<<20)
	for i := range value {
		value[i] = byte(i * 7)
	}
	if err := s.PutFenced(ctx, "big", value, 1); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.GetFenced(ctx, "big")
	if err != nil || !bytes.Equal(got, value) {
		t.Errorf("GetFenced(big) = %d bytes, %v; want the %d bytes put", len(got), err, len(value))
	}
}

// TestFencedConcurrent: writers racing with random tokens leave the highest
// token and its value, and every rejection names a token above the writer's.
func TestFencedConcurrent(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	const writers, puts = 8, 40
	raiseCounter(t, s, writers*puts+1)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range puts {
				tok := token.Token(1 + rand.IntN(writers*puts))
				err := s.PutFenced(ctx, "shared", []byte(fmt.Sprint("written with ", tok)), tok)
				var se *token.StaleError
				switch {
				case err == nil:
				case errors.As(err, &se):
					if se.Highest <= tok {
						t.Errorf("writer %d: token %d rejected with highest %d", w, tok, se.Highest)
					}
				default:
					t.Errorf("writer %d: PutFenced: %v", w, err)
				}
			}
		})
	}
	// One writer holds the highest token of all.
	top := token.Token(writers*puts + 1)
	if err := s.PutFenced(ctx, "shared", []byte(fmt.Sprint("written with ", top)), top); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	v, tok, err := s.GetFenced(ctx, "shared")
	if err != nil || tok != top || string(v) != fmt.Sprint("written with ", top) {
		t.Errorf("GetFenced = %q, %d, %v; want the value written with %d", v, tok, err, top)
	}
}

// raiseCounter sets s's token counter to n, as if n tokens had been issued:
// the fenced KV refuses tokens above it.
func raiseCounter(tb testing.TB, s *sqlite.Store, n token.Token) {
	tb.Helper()
	if err := sqlite.ExecWriter(s, fmt.Sprintf("UPDATE counter SET value = %d WHERE id = 1", n)); err != nil {
		tb.Fatal(err)
	}
}
