package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// blackhole is a loopback TCP proxy to one address that can stop passing
// bytes, in both directions, while keeping every connection open: a network
// partition as a holder's server sees it (no error, no answer).
type blackhole struct {
	ln   net.Listener
	to   string
	drop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	open []net.Conn
}

func startBlackhole(t testing.TB, to string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, to: to}
	b.wg.Go(b.accept)
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.open {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *blackhole) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", b.to)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.open = append(b.open, c, up)
		b.mu.Unlock()
		b.wg.Go(func() { b.pipe(up, c) })
		b.wg.Go(func() { b.pipe(c, up) })
	}
}

// pipe copies src to dst, dropping what it reads while the proxy drops.
func (b *blackhole) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.drop.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (b *blackhole) addr() string { return b.ln.Addr().String() }

// TestEtcdPartitionedHolder: a holder keeps its lease alive through a picket
// server that reaches the etcd cluster only through a proxy; the proxy then
// blackholes (a partition between that server and the cluster). The holder's
// renewals get no answer, its Context() ends at its local deadline, and only
// after that does a waiter on another server, in front of the same cluster,
// get the name, with a higher token.
func TestEtcdPartitionedHolder(t *testing.T) {
	c := etcdtest.Start(t, 3)
	proxy := startBlackhole(t, strings.TrimPrefix(c.Endpoints[0], "http://"))
	cut := startServe(t, "-etcd", proxy.addr(), "-etcd-prefix", "partition")
	whole := startServe(t, "-etcd", strings.Join(c.Endpoints, ","), "-etcd-prefix", "partition")

	const ttl = 2 * time.Second // etcd's minimum with etcdtest's timing
	h, err := mustManager(client(t, cut.url), lease.WithOwner("partitioned")).TryAcquire(t.Context(), "p", ttl)
	if err != nil {
		t.Fatal(err)
	}
	h.KeepAlive()
	time.Sleep(ttl) // renewals go through
	if err := h.Err(); err != nil {
		t.Fatalf("the lease ended before the partition: %v", err)
	}

	type result struct {
		g   lease.Grant
		err error
	}
	waiter := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g, err := client(t, whole.url).Acquire(ctx, lease.AcquireRequest{Name: "p", Holder: "waiter", Owner: "waiter", TTL: ttl, Wait: 45 * time.Second})
		waiter <- result{g, err}
	}()
	time.Sleep(100 * time.Millisecond)
	proxy.drop.Store(true)
	partitioned := time.Now()

	var ended time.Time
	select {
	case <-h.Context().Done():
		ended = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the partitioned holder's context did not end")
	}
	r := <-waiter
	if r.err != nil {
		t.Fatalf("the waiter on the other server: %v", r.err)
	}
	// The grant's deadline counts from before its commit: the commit came
	// after that instant.
	granted := r.g.Expires.Add(-r.g.TTL)
	t.Logf("partition at 0; holder's context ended at %v; waiter granted after %v (token %d, holder's %d)",
		ended.Sub(partitioned).Round(time.Millisecond), granted.Sub(partitioned).Round(time.Millisecond), r.g.Token, h.Token())
	if !ended.Before(granted) {
		t.Errorf("the waiter was granted the name %v before the partitioned holder's context ended", ended.Sub(granted))
	}
	if r.g.Token <= h.Token() {
		t.Errorf("the waiter's token %d is not above the partitioned holder's %d", r.g.Token, h.Token())
	}
	proxy.drop.Store(false)
}
