package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

// plainServer is a "picket serve" built without the race detector, whose
// shadow memory would swamp what the test measures, in a process of its
// own.
type plainServer struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
	done chan struct{}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// plainBinary builds the picket command once per test run, without -race.
func plainBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "picket-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "picket")
		cmd := exec.Command("go", "build", "-o", builtBin, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func startPlainServer(t *testing.T, args ...string) *plainServer {
	t.Helper()
	bin := plainBinary(t)
	db := filepath.Join(t.TempDir(), "picket.db")
	p, logs, addr, done := startServing(t, "", childtest.Options{
		Exe: bin, Args: append([]string{"serve", "-addr", "127.0.0.1:0", "-db", db}, args...),
	})
	return &plainServer{cmd: p.Cmd, addr: addr, logs: logs, done: done}
}

// peakRSS returns the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// heldPuts opens n connections to addr, each sending a PUT of a 1 MiB
// value all but its last byte, holds them for hold, calls during (if not
// nil), then closes them. It returns how many connections wrote all but the
// last byte (into the kernel's buffers, at least).
func heldPuts(t *testing.T, addr string, n int, hold time.Duration, during func()) int {
	t.Helper()
	const size = 1 << 20
	body := make([]byte, size-1)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
		full  int
	)
	for i := range n {
		wg.Go(func() {
			conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Errorf("dial %d: %v", i, err)
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			_ = conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
			head := fmt.Sprintf("PUT /v1/kv/attack/%d HTTP/1.1\r\nHost: 127.0.0.1\r\nFencing-Token: 1\r\nContent-Length: %d\r\n\r\n", i, size)
			if _, err := io.WriteString(conn, head); err != nil {
				return
			}
			if _, err := conn.Write(body); err == nil {
				mu.Lock()
				full++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	time.Sleep(hold)
	if during != nil {
		during()
	}
	for _, c := range conns {
		c.Close()
	}
	return full
}

// TestHeldPutsMemory: 1,000 concurrent PUTs of 1 MiB values, each holding
// back its last byte, against a "picket serve" in a process of its own:
// its peak RSS stays under 256 MiB, because request bodies are held within
// a byte budget (the others are answered 429 at once), and the server
// answers normally afterwards. The control runs 300 such PUTs against a
// server without the budget (-body-budget 0): its peak RSS goes over
// 256 MiB, which shows the measure can tell.
func TestHeldPutsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections and a build: skipped in -short mode")
	}
	const limit = 256 << 20
	for _, tc := range []struct {
		name    string
		args    []string
		conns   int
		control bool
	}{
		{"budget", nil, 1000, false},
		{"control: no budget", []string{"-body-budget", "0"}, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPlainServer(t, tc.args...)
			before := peakRSS(t, s.cmd.Process.Pid)
			var peak, held int64
			full := heldPuts(t, s.addr, tc.conns, 2*time.Second, func() {
				// The server reads the bodies as the kernel hands them over:
				// watch its peak for a while (the control's until it is over
				// the limit), and what the budget says it holds.
				for range 50 {
					peak = peakRSS(t, s.cmd.Process.Pid)
					held = max(held, bodyBytes(t, s.addr))
					if tc.control && peak > limit {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
			t.Logf("%d held 1 MiB PUTs (%d wrote all but the last byte): peak RSS %d MiB (%d MiB before), bodies held up to %d MiB",
				tc.conns, full, peak>>20, before>>20, held>>20)
			if tc.control {
				if peak <= limit {
					t.Errorf("without a budget the peak RSS stayed at %d MiB: the test cannot tell", peak>>20)
				}
				return
			}
			if peak > limit {
				t.Errorf("peak RSS %d MiB under %d held 1 MiB PUTs, want under %d MiB", peak>>20, tc.conns, limit>>20)
			}
			c := client(t, "http://"+s.addr)
			if err := c.Health(t.Context()); err != nil {
				t.Errorf("healthz after the attack: %v", err)
			}
		})
	}
}

// bodyBytes reads picket_request_body_bytes from the server's /metrics.
func bodyBytes(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Log(err)
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "picket_request_body_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int64(f)
		}
	}
	return 0
}
