package redisfence_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/internal/childtest"
)

// The tests run a real redis-server (Debian's redis-server package) on
// 127.0.0.1, with its data in a temporary directory, stopped by its pid.
// Without redis-server they skip, unless PICKET_REQUIRE_REDIS=1 (.ci/run):
// then they fail.
const requireRedisEnv = "PICKET_REQUIRE_REDIS"

// server is a running redis-server.
type server struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis starts redis-server in dir with args besides its own (AOF
// with appendfsync always, as a fence needs), and waits until it answers.
func startRedis(dir string, args ...string) (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	argv := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no"}, args...)
	cmd := exec.Command(bin, argv...)
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd}
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return s, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.stop()
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	return nil, fmt.Errorf("redis-server on %s did not answer within 5 s: %s", s.addr, lastLines(log))
}

func lastLines(b []byte) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return fmt.Sprint(lines)
}

// stop kills the server by its pid and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// needRedis skips tb without redis-server, or fails it if it is required.
func needRedis(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			tb.Fatalf("%s=1 but redis-server is not installed: %v", requireRedisEnv, err)
		}
		tb.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
}

// newRedis starts a server for tb and returns a client to it, both stopped
// at cleanup.
func newRedis(tb testing.TB, args ...string) (*redis.Client, *server) {
	tb.Helper()
	needRedis(tb)
	s, err := startRedis(tb.TempDir(), args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	tb.Cleanup(func() { c.Close() })
	return c, s
}

// The examples share one server, started by the first that asks and
// stopped after every test.
var example struct {
	once sync.Once
	dir  string
	s    *server
}

func exampleAddr() string {
	example.once.Do(func() {
		dir, err := os.MkdirTemp("", "picket-redis-example-")
		if err != nil {
			panic(err)
		}
		example.dir = dir
		if example.s, err = startRedis(dir); err != nil {
			panic(err)
		}
	})
	return example.s.addr
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childtest.Var); name != "" {
		os.Exit(childtest.Run(name))
	}
	flag.Parse()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL: %s=1 but redis-server is not installed\n", requireRedisEnv)
			os.Exit(1)
		}
		// An example cannot skip itself: skip them here.
		skip := flag.Lookup("test.skip")
		pattern := "^Example"
		if old := skip.Value.String(); old != "" {
			pattern = old + "|" + pattern
		}
		skip.Value.Set(pattern)
	}
	code := m.Run()
	if example.s != nil {
		example.s.stop()
	}
	if example.dir != "" {
		os.RemoveAll(example.dir)
	}
	os.Exit(code)
}

// newClient returns a client of its own to addr, closed at cleanup.
func newClient(tb testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	return c
}
