package childtest_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

func init() {
	// echo prints "ready", its arguments and $ECHO_EXTRA, then echoes its
	// stdin line by line until end of file; "cut" prints "cutting" and a
	// line without its newline, and hangs.
	childtest.Register("echo", func() int {
		fmt.Println("ready")
		fmt.Println(strings.Join(childtest.Args(), " "), os.Getenv("ECHO_EXTRA"))
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "cut" {
				fmt.Print("cutting\nhalf a line") // one write
				time.Sleep(time.Hour)
			}
			fmt.Println("echo " + sc.Text())
		}
		return 3
	})
	childtest.Register("tick", func() int {
		for i := 0; ; i++ {
			fmt.Println(i)
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestMain(m *testing.M) { childtest.Main(m) }

func TestLinesArgsAndExit(t *testing.T) {
	p := childtest.Start(t, t.Context(), "echo", childtest.Options{Args: []string{"a", "b"}, Env: []string{"ECHO_EXTRA=x"}})
	for _, want := range []string{"ready", "a b x"} {
		if got, err := p.Line(30 * time.Second); got != want || err != nil {
			t.Fatalf("line %q, %v; want %q", got, err, want)
		}
	}
	if err := p.Send("hello"); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Line(30 * time.Second); got != "echo hello" || err != nil {
		t.Fatalf("line %q, %v; want echo hello", got, err)
	}
	p.CloseStdin()
	if _, err := p.Line(30 * time.Second); err != io.EOF {
		t.Fatalf("after the end: %v, want EOF", err)
	}
	if err := p.Wait(30 * time.Second); p.Cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("exit %v, want status 3", err)
	}
}

func TestKillKeepsCutLineOut(t *testing.T) {
	p := childtest.Start(t, nil, "echo", childtest.Options{})
	p.Line(30 * time.Second)
	p.Line(30 * time.Second)
	p.Send("cut")
	if l, err := p.Line(30 * time.Second); l != "cutting" {
		t.Fatalf("line %q, %v; want cutting", l, err)
	}
	p.Kill()
	p.Wait(30 * time.Second)
	if out := string(p.Output()); !strings.HasSuffix(out, "cutting\nhalf a line") {
		t.Errorf("Output() = %q, want it to end with the cut line", out)
	}
	if !p.Killed() {
		t.Errorf("Killed() = false after SIGKILL")
	}
	if l, err := p.Line(time.Second); err != io.EOF {
		t.Errorf("a line cut short by the kill came out as %q (%v)", l, err)
	}
}

func TestStopContAndBound(t *testing.T) {
	p := childtest.Start(t, nil, "tick", childtest.Options{})
	p.Line(30 * time.Second)
	p.Stop()
	time.Sleep(100 * time.Millisecond)
	for { // drain what it wrote before it stopped
		if _, err := p.Line(200 * time.Millisecond); err != nil {
			if !errors.Is(err, childtest.ErrTimeout) {
				t.Fatal(err)
			}
			break
		}
	}
	p.Cont()
	if _, err := p.Line(30 * time.Second); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
	if err := p.Wait(50 * time.Millisecond); !errors.Is(err, childtest.ErrTimeout) {
		t.Fatalf("Wait on a child that never exits: %v, want ErrTimeout", err)
	}
	if !p.Killed() {
		t.Errorf("the bound did not kill it")
	}
}

func TestUnknownName(t *testing.T) {
	cmd := childtest.Command(t, t.Context(), "no-such", childtest.Options{})
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), "registered: echo, ") || !strings.Contains(stderr.String(), ", tick)") {
		t.Fatalf("%v: exit %d, stderr %q; want 2 naming the registered functions", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
}

// TestAddr: the addresses are loopback, below the ephemeral range, free and
// never handed out twice; AddrInUse knows etcd's fatal line.
func TestAddr(t *testing.T) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo)
	}
	seen := map[string]bool{}
	for range 200 {
		a := childtest.Addr(t)
		host, port, err := net.SplitHostPort(a)
		n, _ := strconv.Atoi(port)
		if err != nil || host != "127.0.0.1" || n >= lo || n < 10000 {
			t.Fatalf("Addr = %q; want 127.0.0.1 and a port in 10000-%d", a, lo-1)
		}
		if seen[a] {
			t.Fatalf("Addr handed out %s twice", a)
		}
		seen[a] = true
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("Addr's %s cannot be listened on: %v", a, err)
		}
		l.Close()
	}
	etcd := `{"level":"fatal","msg":"discovery failed","error":"listen tcp 127.0.0.1:23456: bind: address already in use"}`
	if !childtest.AddrInUse(nil, etcd) || childtest.AddrInUse(nil, "member ready") {
		t.Errorf("AddrInUse does not tell etcd's bind failure from other output")
	}
}
