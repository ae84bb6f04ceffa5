package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

func init() { childtest.Register("opener", openerChild) }

// openerChild is one opener of PICKET_TEST_DB in a process of its own,
// driven line by line on its stdin. It prints "open ok", or "open-error
// KIND: ERR" and exits; then answers each line:
//
//	acquire NAME TTL   granted <token> | held | error <err>
//	health             health ok | health-error <err>
//	list               list <number of live leases> | error <err>
//
// and closes the store at the end of its input. Before opening, with
// PICKET_TEST_NO_PROC=1 it mounts an empty tmpfs over /proc, as in a chroot
// or container without /proc: neither the boot id nor the time namespace's
// offsets can be read (start it in a mount namespace of its own: unshare
// -m).
func openerChild() int {
	if os.Getenv("PICKET_TEST_NO_PROC") == "1" {
		if err := unix.Mount("tmpfs", "/proc", "tmpfs", 0, "size=4k"); err != nil {
			fmt.Printf("error hide /proc: %v\n", err)
			return 1
		}
	}
	s, err := sqlite.Open(os.Getenv("PICKET_TEST_DB"))
	if err != nil {
		fmt.Printf("open-error %s: %v\n", openErrorKind(err), err)
		return 0
	}
	defer s.Close()
	fmt.Println("open ok")
	ctx := context.Background()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "acquire":
			ttl, _ := time.ParseDuration(f[2])
			printAcquire(ctx, s, f[1], ttl)
		case len(f) == 1 && f[0] == "health":
			if err := s.Health(ctx); err != nil {
				fmt.Printf("health-error %v\n", err)
			} else {
				fmt.Println("health ok")
			}
		case len(f) == 1 && f[0] == "list":
			page, err := s.List(ctx, lease.ListRequest{})
			if err != nil {
				fmt.Printf("error %v\n", err)
			} else {
				fmt.Printf("list %d\n", len(page.Leases))
			}
		default:
			fmt.Printf("error unknown command %q\n", sc.Text())
		}
	}
	return 0
}

// printAcquire acquires name for ttl as holder "child" and prints the
// answer: "granted <token>", "held" or "error <err>".
func printAcquire(ctx context.Context, s *sqlite.Store, name string, ttl time.Duration) {
	g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "child", Owner: "child", TTL: ttl})
	switch {
	case err == nil:
		fmt.Printf("granted %d\n", g.Token)
	case errors.Is(err, lease.ErrHeld):
		fmt.Println("held")
	default:
		fmt.Printf("error %v\n", err)
	}
}

// opener is a running openerChild.
type opener struct {
	t      *testing.T
	p      *childtest.Proc
	opened string // its first line: "open ok" or "open-error ..."
}

// startOpener starts openerChild on path, under the command wrap (such as
// unshare -m -T --boottime 3600) if given, with env added, and reads its
// first line.
func startOpener(t *testing.T, path string, wrap []string, env ...string) *opener {
	t.Helper()
	p := childtest.Start(t, t.Context(), "opener", childtest.Options{
		Wrap: wrap, Env: append([]string{"PICKET_TEST_DB=" + path}, env...),
	})
	o := &opener{t: t, p: p}
	t.Cleanup(o.stop)
	o.opened = o.line()
	return o
}

func (o *opener) line() string {
	l, err := o.p.Line(0)
	if err != nil {
		return "exited"
	}
	return l
}

// do sends one command and returns the child's answer.
func (o *opener) do(cmd string) string {
	o.t.Helper()
	if err := o.p.Send(cmd); err != nil {
		return "exited"
	}
	return o.line()
}

// refused returns the kind of the child's refused Open, or "".
func (o *opener) refused() string {
	rest, ok := strings.CutPrefix(o.opened, "open-error ")
	if !ok {
		return ""
	}
	kind, _, _ := strings.Cut(rest, ":")
	return kind
}

// stop closes the child's stdin (it closes its store) and waits for it.
func (o *opener) stop() {
	o.p.CloseStdin()
	o.p.Wait(0)
}

// granted parses "granted N"; 0 for any other answer.
func granted(answer string) int64 {
	s, ok := strings.CutPrefix(answer, "granted ")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// unshareCmd returns the unshare(1) command with args, failing t where it
// cannot run: these tests need root and util-linux.
func unshareCmd(t *testing.T, why string, args ...string) []string {
	t.Helper()
	requireRoot(t, why)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("PICKET_REQUIRE_ROOT") == "1" {
			t.Fatalf("unshare (util-linux) not found: %v", err)
		}
		t.Skipf("unshare (util-linux) not found: %v", err)
	}
	return append([]string{unshare}, args...)
}

// TestRestoreInPlaceLive: picket restore -token-floor N on a running
// store's own file (issue 19 item 4b) is refused with ErrInUse: it would
// lift the in-use mark while the store writes on, and a cp of the file
// taken then would open without a floor and hand out its tokens again.
// The check: after the attempt and more grants by the store, a cp of the
// database file alone never grants a token the store acknowledged.
// Mutant: controls/floor-live.
func TestRestoreInPlaceLive(t *testing.T) {
	dir := t.TempDir()
	path, cp := dir+"/picket.db", dir+"/copy.db"
	srv := startOpener(t, path, nil)
	var highest int64
	grant := func(name string) {
		a := srv.do("acquire " + name + " 1m")
		if granted(a) == 0 {
			t.Fatalf("the running store's acquire of %s: %s", name, a)
		}
		highest = max(highest, granted(a))
	}
	for _, n := range []string{"a", "b", "c"} {
		grant(n)
	}
	_, err := sqlite.Restore(path, path, 10)
	t.Logf("restore in place beside a running store: %v", err)
	for _, n := range []string{"d", "e", "f"} {
		grant(n)
	}
	copyFile(t, path, cp)
	if s, cerr := sqlite.Open(cp); cerr == nil {
		g, aerr := s.Acquire(context.Background(), lease.AcquireRequest{Name: "after", Holder: "h", TTL: time.Minute})
		s.Close()
		if aerr == nil && int64(g.Token) <= highest {
			t.Fatalf("a cp of the live file, taken after the restore, opened without a floor and granted token %d; the store had acknowledged up to %d", g.Token, highest)
		}
	} else if !errors.Is(cerr, sqlite.ErrCopyInUse) {
		t.Errorf("Open of the cp: %v; want ErrCopyInUse", cerr)
	}
	if !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("restore in place beside a running store: %v; want ErrInUse", err)
	}
}
