package lease_test

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dropProxy is a TCP proxy on 127.0.0.1 in front of a server. While
// dropping, it forwards each request late (by delay) and, when the server's
// answer comes, closes the connection instead of passing it on: the server
// has done the work and the client never learns it.
type dropProxy struct {
	ln       net.Listener
	upstream string
	delay    time.Duration
	dropping atomic.Bool
	dropped  atomic.Int64 // answers dropped

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// newDropProxy starts a proxy to upstream (host:port), stopped at the end
// of the test.
func newDropProxy(t *testing.T, upstream string, delay time.Duration) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, upstream: upstream, delay: delay}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// addr returns the proxy's host:port.
func (p *dropProxy) addr() string { return p.ln.Addr().String() }

func (p *dropProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Go(func() { p.requests(c, u) })
		p.wg.Go(func() { p.answers(u, c) })
	}
}

// requests copies the client's bytes to the server, each chunk late while
// dropping.
func (p *dropProxy) requests(c, u net.Conn) {
	defer u.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if p.dropping.Load() {
				time.Sleep(p.delay)
			}
			if _, werr := u.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// answers copies the server's bytes to the client, or, while dropping,
// closes both connections at the first byte of an answer.
func (p *dropProxy) answers(u, c net.Conn) {
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := u.Read(buf)
		if n > 0 {
			if p.dropping.Load() {
				p.dropped.Add(1)
				u.Close()
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *dropProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
