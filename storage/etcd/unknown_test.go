package etcd_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// loseAnswers returns the conformance suite's Harness.LoseAnswer for the
// cluster c: a store that reaches the first member through a proxy on
// 127.0.0.1, and a lose that makes the proxy hold every answer while the
// write is sent, so that the member does the write but its answer arrives
// only after the write's context has ended (200 ms).
func loseAnswers(c *etcdtest.Cluster) func(t *testing.T) (lease.Store, func(write func(ctx context.Context) error) error) {
	return func(t *testing.T) (lease.Store, func(write func(ctx context.Context) error) error) {
		u, err := url.Parse(c.Endpoints[0])
		if err != nil {
			t.Fatal(err)
		}
		p := startHoldProxy(t, u.Host)
		st := mustOpen(t, &etcdtest.Cluster{Endpoints: []string{"http://" + p.addr()}})
		return st, func(write func(ctx context.Context) error) error {
			p.hold()
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			err := write(ctx)
			cancel()
			if n := p.letGo(); n == 0 {
				t.Errorf("the proxy held no answer (write: %v)", err)
			}
			return err
		}
	}
}

// holdProxy forwards TCP connections to a member; while held, the member's
// answers wait in the proxy (the requests still go through).
type holdProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	gate   chan struct{} // closed to let held answers go; nil when not holding
	held   int           // answers held since hold
	conns  []net.Conn
	copies sync.WaitGroup
}

func startHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, target: target}
	p.copies.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *holdProxy) addr() string { return p.ln.Addr().String() }

func (p *holdProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.copies.Go(func() { io.Copy(out, in); out.Close() })
		p.copies.Go(func() { p.answers(in, out); in.Close() })
	}
}

// answers copies the member's answers from out to in, each read waiting
// while the proxy holds.
func (p *holdProxy) answers(in, out net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := out.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			if gate != nil {
				p.held++
			}
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := in.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold makes answers wait from now on.
func (p *holdProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate, p.held = make(chan struct{}), 0
}

// letGo lets the held answers go and returns how many reads were held.
func (p *holdProxy) letGo() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	return p.held
}

func (p *holdProxy) close() {
	p.letGo()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.copies.Wait()
}
