package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

func init() {
	childtest.Register("wal-hold", walHoldChild)
}

// walHoldChild opens PICKET_TEST_DB — first bind-mounting PICKET_TEST_BIND
// onto it (or, for a directory, onto its directory), in the private mount
// namespace it was started in, if set — tries
// to acquire "job", prints "token N" or "held", then "ready", and holds the
// store open until its stdin closes. A refused Open prints "open-error
// KIND: ERR".
func walHoldChild() int {
	path := os.Getenv("PICKET_TEST_DB")
	if src := os.Getenv("PICKET_TEST_BIND"); src != "" {
		if err := bindPrivately(src, path); err != nil {
			fmt.Printf("error bind mount: %v\n", err)
			return 1
		}
	}
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Printf("open-error %s: %v\n", openErrorKind(err), err)
		return 0
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "child", TTL: time.Minute})
	switch {
	case errors.Is(err, lease.ErrHeld):
		fmt.Println("held")
	case err != nil:
		fmt.Printf("error acquire: %v\n", err)
		return 1
	default:
		fmt.Printf("token %d\n", g.Token)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// bindPrivately makes the mount namespace private (the child was started
// with CLONE_NEWNS) and bind-mounts src onto dst, a file or a directory.
func bindPrivately(src, dst string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		dst = filepath.Dir(dst)
	} else if err := os.WriteFile(dst, nil, 0o600); err != nil {
		return err
	}
	return unix.Mount(src, dst, "", unix.MS_BIND, "")
}

func openErrorKind(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{
		{"other-wal", sqlite.ErrOtherWAL},
		{"read-only", sqlite.ErrReadOnly},
		{"copy-in-use", sqlite.ErrCopyInUse},
		{"backup", sqlite.ErrBackupCopy},
		{"not-private", sqlite.ErrNotPrivate},
		{"no-epoch", sqlite.ErrNoEpoch},
		{"other-epoch", sqlite.ErrOtherEpoch},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

// walChild is a running walHoldChild.
type walChild struct {
	p     *childtest.Proc
	lines []string // what it printed up to "ready" or its exit
}

// startWALChild starts walHoldChild on path with env added, in a new
// mount namespace if newNS, and reads its output up to "ready" or its exit.
func startWALChild(t *testing.T, path string, newNS bool, env ...string) *walChild {
	t.Helper()
	o := childOptions(path, "wal", 0, env...)
	if newNS {
		o.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	c := &walChild{p: childtest.Start(t, t.Context(), "wal-hold", o)}
	t.Cleanup(func() { c.stop() })
	for {
		line, err := c.p.Line(0)
		if err != nil {
			break
		}
		c.lines = append(c.lines, line)
		if line == "ready" || strings.HasPrefix(line, "open-error") || strings.HasPrefix(line, "error") {
			break
		}
	}
	return c
}

// stop closes the child's stdin and waits for it.
func (c *walChild) stop() {
	c.p.CloseStdin()
	c.p.Wait(0)
}

// refused returns the kind of the child's refused Open, or "".
func (c *walChild) refused() string {
	for _, l := range c.lines {
		if rest, ok := strings.CutPrefix(l, "open-error "); ok {
			kind, _, _ := strings.Cut(rest, ":")
			return kind
		}
	}
	return ""
}

// granted returns the token the child was granted "job" with, or 0.
func (c *walChild) granted() token.Token {
	for _, l := range c.lines {
		if s, ok := strings.CutPrefix(l, "token "); ok {
			tok, _ := token.Parse(s)
			return tok
		}
	}
	return 0
}

// wantOtherWAL fails unless err is Open's refusal of a second WAL, saying
// what to do.
func wantOtherWAL(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, sqlite.ErrOtherWAL) {
		t.Fatalf("Open through a second path: %v; want ErrOtherWAL", err)
	}
	if !strings.Contains(err.Error(), "mount the directory, not the file") {
		t.Errorf("the error does not say what to do: %v", err)
	}
}

func hardLinked(t *testing.T) (a, b string) {
	t.Helper()
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestOneWALHardLink: a database opened as a.db is refused through its hard
// link b.db — in the same process, in another process after it, and the
// other way round; once the first closes (checkpointing), the link opens
// and goes on from the same counter. Mutant: controls/no-check-wal (the link
// is then refused only by other checks: the in-use mark, or, in one
// process, damaged pages).
func TestOneWALHardLink(t *testing.T) {
	t.Run("same process", func(t *testing.T) {
		a, b := hardLinked(t)
		s, err := sqlite.Open(a)
		if err != nil {
			t.Fatal(err)
		}
		g := acquire(t, s, "job", "h", time.Minute)
		s2, err := sqlite.Open(b)
		if err == nil {
			s2.Close()
		}
		wantOtherWAL(t, err)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 = mustOpenPath(t, b)
		if g2 := acquire(t, s2, "other", "h", time.Minute); g2.Token <= g.Token {
			t.Errorf("through the link after a clean close: token %d, want above %d", g2.Token, g.Token)
		}
	})
	t.Run("another process after", func(t *testing.T) {
		a, b := hardLinked(t)
		s := mustOpenPath(t, a)
		acquire(t, s, "job", "h", time.Minute)
		c := startWALChild(t, b, false)
		if c.refused() != "other-wal" {
			t.Fatalf("a child opening the link printed %q; want open-error other-wal", c.lines)
		}
	})
	t.Run("another process before", func(t *testing.T) {
		a, b := hardLinked(t)
		c := startWALChild(t, a, false)
		if c.granted() == 0 {
			t.Fatalf("child printed %q; want a token", c.lines)
		}
		s, err := sqlite.Open(b)
		if err == nil {
			s.Close()
		}
		wantOtherWAL(t, err)
	})
}

// TestOneWALSymlink: symbolic links to the file and to its directory lead
// to the one WAL: in the same process and in another, they open and see
// the lease held through the real path.
func TestOneWALSymlink(t *testing.T) {
	dir := t.TempDir()
	realDir := filepath.Join(dir, "real")
	if err := os.Mkdir(realDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(realDir, "picket.db")
	fileLink, dirLink := filepath.Join(dir, "link.db"), filepath.Join(dir, "linkdir")
	if err := os.Symlink(path, fileLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realDir, dirLink); err != nil {
		t.Fatal(err)
	}
	s := mustOpenPath(t, path)
	g := acquire(t, s, "job", "h", time.Minute)
	for _, p := range []string{fileLink, filepath.Join(dirLink, "picket.db")} {
		s2 := mustOpenPath(t, p)
		_, err := s2.Acquire(ctxT(t), lease.AcquireRequest{Name: "job", Holder: "h2", TTL: time.Minute})
		if !errors.Is(err, lease.ErrHeld) {
			t.Errorf("through %s: Acquire(job) = %v; want ErrHeld", p, err)
		}
		c := startWALChild(t, p, false)
		if len(c.lines) == 0 || c.lines[0] != "held" {
			t.Errorf("a child through %s printed %q; want held", p, c.lines)
		}
		c.stop()
	}
	if g2 := acquire(t, s, "other", "h", time.Minute); g2.Token != g.Token+1 {
		t.Errorf("next token %d, want %d", g2.Token, g.Token+1)
	}
}

// TestOneWALBindMount: the file alone bind-mounted into a private mount
// namespace (as into a container) is refused, either way round; the
// directory bind-mounted works and sees the lease. Mutant no-check-wal:
// the single-file mount is let in.
func TestOneWALBindMount(t *testing.T) {
	requireRoot(t, "mount namespaces and bind mounts")
	setup := func(t *testing.T) (host, ctr string) {
		dir := t.TempDir()
		host, ctr = filepath.Join(dir, "host"), filepath.Join(dir, "ctr")
		for _, d := range []string{host, ctr} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(host, "picket.db"), filepath.Join(ctr, "picket.db")
	}
	t.Run("file, host first", func(t *testing.T) {
		host, ctr := setup(t)
		s := mustOpenPath(t, host)
		acquire(t, s, "job", "h", time.Minute)
		c := startWALChild(t, ctr, true, "PICKET_TEST_BIND="+host)
		if c.refused() != "other-wal" {
			t.Fatalf("the container printed %q; want open-error other-wal", c.lines)
		}
	})
	t.Run("file, container first", func(t *testing.T) {
		host, ctr := setup(t)
		if err := os.WriteFile(host, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		c := startWALChild(t, ctr, true, "PICKET_TEST_BIND="+host)
		if c.granted() == 0 {
			t.Fatalf("the container printed %q; want a token", c.lines)
		}
		s, err := sqlite.Open(host)
		if err == nil {
			s.Close()
		}
		wantOtherWAL(t, err)
	})
	t.Run("directory", func(t *testing.T) {
		host, ctr := setup(t)
		s := mustOpenPath(t, host)
		acquire(t, s, "job", "h", time.Minute)
		c := startWALChild(t, ctr, true, "PICKET_TEST_BIND="+filepath.Dir(host))
		if len(c.lines) == 0 || c.lines[0] != "held" {
			t.Fatalf("the container, given the directory, printed %q; want held", c.lines)
		}
	})
}
