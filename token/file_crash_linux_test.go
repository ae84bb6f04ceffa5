package token_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
)

// TestWriteFileCrash: a real child process writes the file with rising
// tokens (each data "tok:N") and dies by SIGKILL: at each of WriteFile's
// crash points ("fence-raised": the higher token durable, the data not yet
// replaced; "data-replaced") on its 1st to 4th write, and at 12 random
// moments. After each death, checked: the fence is at least the last
// acknowledged token and at least the token of the data on disk (a lower
// token never wins afterwards), the data is the last acknowledged write or
// the one in flight, and a write with a token below the fence is refused. Its
// mutant: testdata/controls/file-data-first (the data replaced before the
// fence is raised).
func TestWriteFileCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	next := token.Token(1)
	type crash struct {
		point string
		n     int
		after time.Duration
	}
	var plan []crash
	for _, p := range []string{"fence-raised", "data-replaced"} {
		for n := 1; n <= 4; n++ {
			plan = append(plan, crash{point: p, n: n})
		}
	}
	for range 12 {
		plan = append(plan, crash{after: time.Duration(1+rand.IntN(30)) * time.Millisecond})
	}
	for i, c := range plan {
		p := childtest.Start(t, t.Context(), "file-crash", childtest.Options{Env: []string{
			"PICKET_TEST_FILE=" + path, "PICKET_TEST_POINT=" + c.point, "PICKET_TEST_N=" + strconv.Itoa(c.n),
			"PICKET_TEST_FROM=" + next.String()}})
		if c.point == "" {
			time.Sleep(c.after)
			p.Kill()
		}
		p.Wait(20 * time.Second)
		if !p.Killed() {
			t.Fatalf("crash %d (%+v): the child was not killed: %q", i, c, p.Output())
		}
		var acked token.Token
		for _, line := range strings.Split(string(p.Output()), "\n") {
			if s, ok := strings.CutPrefix(line, "ack "); ok {
				acked, _ = token.Parse(s)
			}
		}
		fence := readFenceFile(t, path)
		data, err := os.ReadFile(path)
		var onDisk token.Token
		if err == nil {
			onDisk, err = token.Parse(strings.TrimPrefix(string(data), "tok:"))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("crash %d: the data: %q, %v", i, data, err)
		}
		switch {
		case fence < acked:
			t.Errorf("crash %d (%+v): the fence is %d, below the acknowledged token %d", i, c, fence, acked)
		case onDisk > fence:
			t.Errorf("crash %d (%+v): the data on disk is token %d's, above the fence %d: a lower token can now overwrite it", i, c, onDisk, fence)
		case onDisk < acked:
			t.Errorf("crash %d (%+v): the data is token %d's, below the acknowledged %d", i, c, onDisk, acked)
		}
		if fence > 1 {
			err := token.WriteFile(t.Context(), path, fence-1, []byte("late"), 0o644)
			if !errors.Is(err, token.ErrStale) {
				t.Errorf("crash %d: a write with token %d below the fence %d: %v, want ErrStale", i, fence-1, fence, err)
			}
		}
		next = max(fence, acked) + 1
	}
	t.Logf("%d crashes; the last token %d", len(plan), next-1)
}

func readFenceFile(t *testing.T, path string) token.Token {
	t.Helper()
	b, err := os.ReadFile(path + ".fence")
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := token.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the fence file holds %q: %v", b, err)
	}
	return f
}

// TestFileProof is the SIGSTOP proof (internal/fenceproof) on a fenced
// file: worker processes holding one picket lease replace one file with
// token.WriteFile while holders are frozen past their TTL and thawed; no
// late write may land after a newer holder's. Its control: the mutant
// file-no-compare.
func TestFileProof(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.txt")
	fenceproof.Check(t, fenceproof.Run(t, fenceproof.Plan{Child: "file-proof", Env: []string{"PICKET_TEST_FILE=" + path}}))
}

func init() {
	childtest.Register("file-crash", fileCrashChild)
	childtest.Register("file-proof", func() int {
		path := os.Getenv("PICKET_TEST_FILE")
		return fenceproof.Worker(func(ctx context.Context, t token.Token, value string) error {
			return token.WriteFile(ctx, path, t, []byte(value), 0o644)
		})
	})
}

// fileCrashChild writes PICKET_TEST_FILE with tokens from PICKET_TEST_FROM
// up, printing "ack N" after each, and kills itself at the Nth call of
// PICKET_TEST_POINT (if set).
func fileCrashChild() int {
	path, point := os.Getenv("PICKET_TEST_FILE"), os.Getenv("PICKET_TEST_POINT")
	n, _ := strconv.Atoi(os.Getenv("PICKET_TEST_N"))
	from, err := token.Parse(os.Getenv("PICKET_TEST_FROM"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	calls := 0
	token.SetFileHook(func(p string) {
		if p == point {
			if calls++; calls == n {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	})
	for t := from; t < from+100000; t++ {
		if err := token.WriteFile(context.Background(), path, t, []byte("tok:"+t.String()), 0o644); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Printf("ack %d\n", t)
	}
	return 0
}
