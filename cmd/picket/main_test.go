package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

// The tests run picket as real processes: the test binary re-executes
// itself as the child "picket" (internal/childtest) and becomes the
// command. What it starts again of itself (picket run's guard, picket bench
// -procs, a command "picket kv" under picket run) inherits the variable
// and is picket too.
func init() {
	childtest.Register("picket", func() int {
		return Main(context.Background(), childtest.Args(), os.Stdin, os.Stdout, os.Stderr)
	})
}

func TestMain(m *testing.M) { childtest.Main(m) }

// picket returns a command that runs picket with args, its stdout and
// stderr unset.
func picket(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := childtest.Command(t, nil, "picket", childtest.Options{Args: args})
	cmd.Stderr = nil
	return cmd
}

// result is what a finished picket process left.
type result struct {
	code           int
	stdout, stderr string
}

// runPicket runs picket to the end (at most a minute) and returns its exit
// status and output.
func runPicket(t testing.TB, args ...string) result {
	t.Helper()
	cmd, out, errb := startPicket(t, args...)
	return waitPicket(t, cmd, out, errb, time.Minute)
}

// startPicketProc starts picket with args as a childtest.Proc: its stdout
// lines read with Line, its stderr kept in errb; t.Cleanup kills it.
func startPicketProc(t testing.TB, args ...string) (p *childtest.Proc, errb *syncBuffer) {
	t.Helper()
	errb = &syncBuffer{}
	return childtest.Start(t, nil, "picket", childtest.Options{Args: args, Stderr: errb}), errb
}

// startPicket starts picket with args, its stdout and stderr kept in out
// and errb (read them once it has exited: waitPicket).
func startPicket(t testing.TB, args ...string) (cmd *exec.Cmd, out, errb *bytes.Buffer) {
	t.Helper()
	cmd = picket(t, args...)
	out, errb = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, errb
}

func waitPicket(t testing.TB, cmd *exec.Cmd, out, errb *bytes.Buffer, limit time.Duration) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("picket %v did not finish within %v; stderr:\n%s", cmd.Args[1:], limit, errb)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// server is a "picket serve" child process.
type server struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan struct{}
}

// startServer starts "picket serve" on a free loopback port with the file db
// and waits until it listens.
func startServer(t testing.TB, db string, extra ...string) *server {
	t.Helper()
	return startServe(t, append([]string{"-db", db}, extra...)...)
}

// startServe starts "picket serve" on a free loopback port with args and
// waits until it listens.
func startServe(t testing.TB, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)
	p, logs, addr, done := startServing(t, "picket", childtest.Options{Args: args})
	return &server{cmd: p.Cmd, url: "http://" + addr, logs: logs, done: done}
}

// startServing starts a picket serve process (the child name, or with name
// "" the program o.Exe) with -addr-file added to its arguments, keeps its
// stderr in logs and waits until the address file appears: the address it
// serves on. done is closed once it has exited and its stderr was read;
// t.Cleanup kills it.
func startServing(t testing.TB, name string, o childtest.Options) (p *childtest.Proc, logs *syncBuffer, addr string, done chan struct{}) {
	t.Helper()
	logs, done = &syncBuffer{}, make(chan struct{})
	addrFile := filepath.Join(t.TempDir(), "addr")
	o.Args = append(slices.Clip(o.Args), "-addr-file", addrFile)
	o.StderrLines = true
	o.OnLine = func(line string) { logs.WriteString(line + "\n") }
	p = childtest.Start(t, nil, name, o)
	go func() {
		p.Wait(0)
		close(done)
	}()
	deadline := time.After(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			return p, logs, strings.TrimSpace(string(b)), done
		}
		select {
		case <-done:
			t.Fatalf("picket serve exited before listening:\n%s", logs)
		case <-deadline:
			t.Fatalf("picket serve did not listen within 30s:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill9 kills the server with SIGKILL and waits for it to be gone.
func (s *server) kill9(t testing.TB) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop sends sig and returns the exit status once the server is gone.
func (s *server) stop(t testing.TB, sig os.Signal) int {
	t.Helper()
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatalf("picket serve did not stop within a minute after %v:\n%s", sig, s.logs)
	}
	return s.cmd.ProcessState.ExitCode()
}

// mode is one way of reaching the store: an embedded file or a server.
type mode struct {
	name  string
	flags func(t testing.TB, db string) []string
}

var modes = []mode{
	{"embedded", func(t testing.TB, db string) []string { return []string{"-db", db} }},
	{"remote", func(t testing.TB, db string) []string {
		return []string{"-server", startServer(t, db).url}
	}},
}

type grantOut struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMillis int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

func decodeGrant(t testing.TB, r result) grantOut {
	t.Helper()
	var g grantOut
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil {
		t.Fatalf("grant output %q: %v (stderr %q)", r.stdout, err, r.stderr)
	}
	return g
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) WriteString(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(str)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond every 10 ms until it holds or limit passes.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func tempDB(t testing.TB) string { return filepath.Join(t.TempDir(), "picket.db") }

var _ = io.Discard
var _ = fmt.Sprint
var _ = strings.TrimSpace
