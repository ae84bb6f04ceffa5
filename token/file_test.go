//go:build linux

package token_test

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
)

func wantStale(t *testing.T, err error, tok, highest token.Token) {
	t.Helper()
	var se *token.StaleError
	if !errors.As(err, &se) || !errors.Is(err, token.ErrStale) || se.Token != tok || se.Highest != highest {
		t.Fatalf("got %v, want a *token.StaleError of token %d, highest %d", err, tok, highest)
	}
}

// TestWriteFile: a fenced file step by step — a first token, the same
// again, a higher one, a lower one (stale, nothing written), a RemoveFile
// that keeps the fence, a lower write after it still stale — with what
// ReadFile and the directory show after each.
func TestWriteFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func() (string, token.Token) {
		t.Helper()
		b, h, err := token.ReadFile(ctx, path)
		if errors.Is(err, fs.ErrNotExist) {
			return "<none>", h
		}
		must(err)
		return string(b), h
	}
	must(token.WriteFile(ctx, path, 5, []byte("from 5"), 0o644))
	must(token.WriteFile(ctx, path, 5, []byte("from 5 again"), 0o644))
	must(token.WriteFile(ctx, path, 7, []byte("from 7"), 0o644))
	wantStale(t, token.WriteFile(ctx, path, 6, []byte("from 6"), 0o644), 6, 7)
	if d, h := read(); d != "from 7" || h != 7 {
		t.Fatalf("after a stale write: %q, highest %d; want %q, 7", d, h, "from 7")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode: %v, %v", fi, err)
	}
	must(token.RemoveFile(ctx, path, 8))
	wantStale(t, token.WriteFile(ctx, path, 7, []byte("from 7, late"), 0o644), 7, 8)
	if d, h := read(); d != "<none>" || h != 8 {
		t.Fatalf("after RemoveFile(8) and a stale write: %q, highest %d", d, h)
	}
	wantStale(t, token.RemoveFile(ctx, path, 2), 2, 8)
	must(token.WriteFile(ctx, path, 9, []byte("from 9"), 0o600))
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"report.json", "report.json.fence", "report.json.lock"}, names); d != "" {
		t.Fatalf("the directory (-want +got):\n%s", d)
	}
}

// TestWriteFileBadInput: a zero token, one above Max, an empty path, a
// directory, a symbolic link, the fence's own names: ErrInvalid, and the
// directory is as it was.
func TestWriteFileBadInput(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "target"), []byte("keep"), 0o644))
	must(os.Symlink("target", filepath.Join(dir, "link")))
	before := listDir(t, dir)
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name string
		err  error
	}{
		{"zero token", token.WriteFile(ctx, p("a"), 0, []byte("x"), 0o644)},
		{"token above Max", token.WriteFile(ctx, p("a"), token.Max+1, []byte("x"), 0o644)},
		{"empty path", token.WriteFile(ctx, "", 1, []byte("x"), 0o644)},
		{"a directory", token.WriteFile(ctx, p("sub"), 1, []byte("x"), 0o644)},
		{"a symbolic link", token.WriteFile(ctx, p("link"), 1, []byte("x"), 0o644)},
		{"the fence's own name", token.WriteFile(ctx, p("a.fence"), 1, []byte("x"), 0o644)},
		{"a .lock", token.RemoveFile(ctx, p("a.lock"), 1)},
		{"remove with zero", token.RemoveFile(ctx, p("a"), 0)},
		{"read a directory", func() error { _, _, err := token.ReadFile(ctx, p("sub")); return err }()},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, token.ErrInvalid) || errors.Is(tc.err, token.ErrStale) {
			t.Errorf("%s: got %v, want an error matching token.ErrInvalid", tc.name, tc.err)
		}
	}
	if d := cmp.Diff(before, listDir(t, dir)); d != "" {
		t.Fatalf("bad input changed the directory (-before +after):\n%s", d)
	}
	// A fence file that holds no token is refused, never read as zero.
	must(os.WriteFile(p("b.fence"), []byte("junk"), 0o600))
	if err := token.WriteFile(ctx, p("b"), 1, []byte("x"), 0o644); err == nil || errors.Is(err, token.ErrStale) {
		t.Fatalf("a write over a junk fence: %v, want an error", err)
	}
	if _, err := os.Stat(p("b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("written over a junk fence")
	}
}

func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Lstat(path)
		b, _ := os.ReadFile(path)
		out[strings.TrimPrefix(path, dir)] = fi.Mode().String() + " " + string(b)
		return nil
	})
	return out
}

// TestWriteFileConcurrent: 8 goroutines, each write on opens of its own
// (OFD locks exclude opens, not processes), take rising tokens and write
// them after random delays; 800 writes. Checked: no write admitted after a
// higher token's write returned, every refusal ErrStale, some refused, and
// at the end the file holds the highest admitted token and so does the
// fence.
func TestWriteFileConcurrent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hot")
	type write struct {
		tok        token.Token
		start, end time.Duration
	}
	var (
		next     atomic.Uint64
		mu       sync.Mutex
		admitted []write
		refused  int
		epoch    = time.Now()
		wg       sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for range 100 {
				tok := token.Token(next.Add(1))
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				start := time.Since(epoch)
				err := token.WriteFile(ctx, path, tok, []byte(tok.String()), 0o644)
				end := time.Since(epoch)
				mu.Lock()
				switch {
				case err == nil:
					admitted = append(admitted, write{tok, start, end})
				case errors.Is(err, token.ErrStale):
					refused++
				default:
					t.Errorf("token %d: %v", tok, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].end < admitted[j].end })
	var top token.Token
	var timed []fenceproof.Timed
	for _, w := range admitted {
		top = max(top, w.tok)
		timed = append(timed, fenceproof.Timed{Token: w.tok, Start: w.start, End: w.end})
	}
	if late := fenceproof.Overtaken(timed); len(late) > 0 {
		t.Fatalf("%d writes admitted after a higher token was acknowledged: %v", len(late), late)
	}
	if refused == 0 {
		t.Fatalf("no write of %d was refused: the test did not race", len(admitted))
	}
	b, h, err := token.ReadFile(ctx, path)
	if err != nil || string(b) != top.String() || h != top {
		t.Fatalf("the file holds %q, highest %d (%v); want %d for both", b, h, err, top)
	}
	t.Logf("%d admitted, %d refused as stale; highest %d", len(admitted), refused, top)
}

// TestReadFileWaitsForTheLock: ReadFile waits while a writer holds the
// lock, and gives up with ctx's error.
func TestReadFileWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := token.WriteFile(t.Context(), path, 1, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	lk, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := lockExclusive(lk); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := token.ReadFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadFile under another's lock: %v, want the deadline", err)
	}
	if err := token.WriteFile(ctx, path, 2, []byte("y"), 0o644); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteFile under another's lock: %v, want the deadline", err)
	}
}
