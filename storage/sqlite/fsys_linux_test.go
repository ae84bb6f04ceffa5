package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// mountOverlay mounts an overlay (as a container's root file system is)
// and returns its upper directory and its merged one.
func mountOverlay(t *testing.T) (upper, merged string) {
	t.Helper()
	requireRoot(t, "mount -t overlay needs CAP_SYS_ADMIN")
	dir := t.TempDir()
	lower, upper, work, merged := filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount -t overlay: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	return upper, merged
}

// syncBuffer is a log destination tests read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestOverlayRefused: a store through an overlay's merged path (a
// container's root) and one through its upper directory (the host) share
// the data, -wal and -shm but not their locks (issue 19 item 1). A child
// granting through the merged path is refused with ErrOverlay, creating
// nothing; this process grants through the upper directory. The check: no
// token is handed out twice between them. Mutant: controls/overlay.
func TestOverlayRefused(t *testing.T) {
	upper, merged := mountOverlay(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := mustOpenPath(t, filepath.Join(upper, "picket.db"))
	p := childtest.Start(t, ctx, "grant-loop", childOptions(filepath.Join(merged, "picket.db"), "merged", 0))
	first, err := p.Line(0)
	if err != nil {
		first = "exited"
	}
	seen := map[token.Token]string{}
	var dups []string
	note := func(tok token.Token, who string) {
		if w, ok := seen[tok]; ok {
			dups = append(dups, fmt.Sprintf("%d (%s and %s)", tok, w, who))
		}
		seen[tok] = who
	}
	if first == "ready" {
		// Both opened: grant through the upper directory while the child
		// grants through the merged path, for up to 3 s.
		var mu sync.Mutex
		childToks := make(chan token.Token, 1<<16)
		go func() {
			for {
				line, err := p.Line(0)
				if err != nil {
					break
				}
				if v, ok := strings.CutPrefix(line, "token "); ok {
					if tok, err := token.Parse(v); err == nil {
						childToks <- tok
					}
				}
			}
			close(childToks)
		}()
		var wg sync.WaitGroup
		deadline := time.Now().Add(3 * time.Second)
		for w := range 4 {
			wg.Go(func() {
				for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
					g, err := s.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprintf("upper/%d/%d", w, i), Holder: "h", TTL: time.Minute})
					if err != nil {
						return
					}
					mu.Lock()
					note(g.Token, "upper")
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		p.Kill()
		for tok := range childToks {
			note(tok, "merged")
		}
	}
	t.Logf("the child through the merged path: %s; %d tokens in all", first, len(seen))
	if len(dups) > 0 {
		t.Fatalf("%d tokens handed out twice through the overlay's two paths, such as %s", len(dups), dups[0])
	}
	if !strings.Contains(first, "the database is on overlayfs") || !strings.Contains(first, "bind-mounted directory") {
		t.Errorf("the child through the merged path said %q; want it refused (ErrOverlay), saying to use a volume or a bind-mounted directory", first)
	}
	// Refused before anything was created.
	if _, err := sqlite.Open(filepath.Join(merged, "new.db")); !errors.Is(err, sqlite.ErrOverlay) {
		t.Errorf("Open of a new file on overlayfs: %v; want ErrOverlay", err)
	}
	if _, err := os.Stat(filepath.Join(upper, "new.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Open created the file: %v", err)
	}
}

// TestOverlayRisk: WithOverlayRisk opens a database on overlayfs (a test
// suite in a container) and says so in the log.
func TestOverlayRisk(t *testing.T) {
	_, merged := mountOverlay(t)
	var logs syncBuffer
	s := mustOpenPath(t, filepath.Join(merged, "picket.db"), sqlite.WithOverlayRisk(), sqlite.WithLogger(log.NewLogfmtLogger(&logs)))
	acquire(t, s, "job", "h", time.Minute)
	if !strings.Contains(logs.String(), "overlayfs, accepted by WithOverlayRisk") {
		t.Errorf("the log does not say the risk was accepted: %q", logs.String())
	}
}

// TestTmpfsWarns: a store on tmpfs opens and warns that its tokens do not
// survive a reboot.
func TestTmpfsWarns(t *testing.T) {
	requireRoot(t, "mount -t tmpfs needs CAP_SYS_ADMIN")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Fatalf("mount -t tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	var logs syncBuffer
	s := mustOpenPath(t, filepath.Join(dir, "picket.db"), sqlite.WithLogger(log.NewLogfmtLogger(&logs)))
	acquire(t, s, "job", "h", time.Minute)
	if !strings.Contains(logs.String(), "on tmpfs: it does not survive a reboot") {
		t.Errorf("no warning about tmpfs in the log: %q", logs.String())
	}
}
