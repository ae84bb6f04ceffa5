package sqlite_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/storage/sqlite"
)

func init() { childtest.Register("gate-freeze", gateFreezeChild) }

// gateFreezeChild opens PICKET_TEST_DB and stops itself (SIGSTOP) while
// Open holds the file's gate, after printing "frozen".
func gateFreezeChild() int {
	sqlite.SetTestHook(func(point string) {
		if point == "joining" {
			fmt.Println("frozen")
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
	})
	s, err := sqlite.Open(os.Getenv("PICKET_TEST_DB"))
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	s.Close()
	return 0
}

// TestGateFrozenProcess: a process stopped (SIGSTOP) while it joins the
// file, holding the gate, stalls neither Open nor Close for the busy
// timeout: Open fails soon, naming the stopped process and "kill -CONT";
// Close returns soon; and the file that clean Close left opens again, with
// the next token above the last (it is not refused as "copied while in
// use"). Bounds are generous: each call within 6 s, the busy timeout 10 s.
//
// Before: Open and Close each waited the whole 10 s, and the file was
// then refused as a copy.
func TestGateFrozenProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	ctx := ctxT(t)
	s := mustOpenPath(t, path)
	g := acquire(t, s, "job", "h", time.Hour)

	p := childtest.Start(t, ctx, "gate-freeze", childOptions(path, "frozen", 0))
	deadline := time.Now().Add(30 * time.Second)
	for !stopped(p.Pid()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if out := string(p.Output()); !stopped(p.Pid()) || !strings.Contains(out, "frozen") {
		t.Fatalf("the child did not stop while joining: %q", out)
	}

	start := time.Now()
	s2, err := sqlite.Open(path)
	took := time.Since(start)
	if err == nil {
		s2.Close()
	}
	t.Logf("Open beside the stopped process: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(p.Pid())) || !strings.Contains(err.Error(), "kill -CONT") {
		t.Errorf("Open beside the stopped process: %v; want an error naming process %d and kill -CONT", err, p.Pid())
	}
	if took > 6*time.Second {
		t.Errorf("Open waited %v for the stopped process", took)
	}

	start = time.Now()
	err = s.Close()
	took = time.Since(start)
	t.Logf("Close beside the stopped process: %v after %v", err, took.Round(time.Millisecond))
	if took > 6*time.Second {
		t.Errorf("Close waited %v for the stopped process", took)
	}
	p.Kill()
	p.Wait(0)

	s = mustOpenPath(t, path)
	if g2 := acquire(t, s, "next", "h", time.Hour); g2.Token <= g.Token {
		t.Errorf("after the stop: token %d; want above %d", g2.Token, g.Token)
	}
	if _, err := s.Get(ctx, "job"); err != nil {
		t.Errorf("the lease granted before is gone: %v", err)
	}
}

// stopped reports whether process pid is stopped (state T in /proc).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}
