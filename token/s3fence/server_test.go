package s3fence_test

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/token/s3fence"
)

// The tests run a real versitygw (an S3-compatible server, built from the
// Go module proxy by .ci/versitygw) on 127.0.0.1 with its POSIX backend's
// data in a temporary directory, stopped by its pid. The binary is
// $PICKET_VERSITYGW_BIN, else versitygw on the PATH, else what
// .ci/versitygw builds (once, into a cache directory). Without one the
// tests skip, unless PICKET_REQUIRE_S3=1 (.ci/run): then they fail.
const (
	requireS3Env = "PICKET_REQUIRE_S3"
	binEnv       = "PICKET_VERSITYGW_BIN"
	access       = "picket-test"
	secret       = "picket-test-secret"
	bucketName   = "fenced"
)

var gateway struct {
	once sync.Once
	bin  string
	err  error
}

// gatewayBin finds the versitygw binary, once.
func gatewayBin() (string, error) {
	gateway.once.Do(func() {
		if b := os.Getenv(binEnv); b != "" {
			gateway.bin = b
			return
		}
		if b, err := exec.LookPath("versitygw"); err == nil {
			gateway.bin = b
			return
		}
		script, err := filepath.Abs("../../.ci/versitygw")
		if err != nil {
			gateway.err = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command(script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			gateway.err = fmt.Errorf("%s: %v: %s", script, err, lastLines(stderr.Bytes()))
			return
		}
		gateway.bin = strings.TrimSpace(string(out))
	})
	return gateway.bin, gateway.err
}

// server is a running versitygw.
type server struct {
	endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

// startGateway starts versitygw serving the directory dir/root (each of
// its subdirectories a bucket) on a free loopback port, waits until it
// answers, and creates the bucket bucketName. A port taken between its
// choice and the server's listen is tried again, up to three times.
func startGateway(dir string) (*server, error) {
	bin, err := gatewayBin()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	var last error
	for range 3 {
		s, err := startOnce(bin, dir, root)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startOnce(bin, dir, root string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--port", addr, "--access", access, "--secret", secret, "--quiet", "posix", root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{endpoint: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	c := newClient(s.endpoint)
	for range 400 {
		select {
		case <-s.done:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("versitygw on %s exited: %s", addr, lastLines(log))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucketName)})
		cancel()
		if err == nil {
			return s, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.stop()
	log, _ := os.ReadFile(logf.Name())
	return nil, fmt.Errorf("versitygw on %s did not create a bucket within 10 s (%v): %s", addr, err, lastLines(log))
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

// stop ends the server by its pid and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// newClient returns an S3 client of its own to endpoint.
func newClient(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		UsePathStyle: true,
	})
}

// needGateway skips tb without versitygw, or fails it if it is required.
func needGateway(tb testing.TB) {
	tb.Helper()
	if _, err := gatewayBin(); err != nil {
		if os.Getenv(requireS3Env) == "1" {
			tb.Fatalf("%s=1 but no versitygw: %v", requireS3Env, err)
		}
		tb.Skipf("no versitygw (.ci/versitygw builds it): %v", err)
	}
}

// newGateway starts a server for tb, stopped at cleanup, and returns a
// fenced Bucket on it (its bucket is bucketName) and the server.
func newGateway(tb testing.TB) (s3fence.Bucket, *server) {
	tb.Helper()
	needGateway(tb)
	s, err := startGateway(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	return s3fence.Bucket{Client: newClient(s.endpoint), Name: bucketName}, s
}

// The examples share one server, started by the first that asks and
// stopped after every test.
var example struct {
	once sync.Once
	dir  string
	s    *server
}

func exampleEndpoint() string {
	example.once.Do(func() {
		dir, err := os.MkdirTemp("", "picket-s3-example-")
		if err != nil {
			panic(err)
		}
		example.dir = dir
		if example.s, err = startGateway(dir); err != nil {
			panic(err)
		}
	})
	return example.s.endpoint
}

// exampleCredentials are the example server's.
func exampleCredentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(access, secret, "")
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childtest.Var); name != "" {
		os.Exit(childtest.Run(name))
	}
	flag.Parse()
	if _, err := gatewayBin(); err != nil {
		if os.Getenv(requireS3Env) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL: %s=1 but no versitygw: %v\n", requireS3Env, err)
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
