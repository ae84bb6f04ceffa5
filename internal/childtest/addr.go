package childtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// given holds the ports Addr handed out in this process.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Addr returns a loopback address ("127.0.0.1:port") for a child process to
// listen on, such as an etcd member whose address its peers must know before
// it starts. Picking a port by listening on port 0 and closing the listener
// races twice: the kernel hands the same port to the next process that asks
// for port 0 or connects out (it is in the ephemeral range), and another
// test may pick it too. Addr picks at random below the ephemeral range
// (net.ipv4.ip_local_port_range), which the kernel never hands out by
// itself, checks that the port is free, and never hands a port out twice in
// one process. Another process may still take it first (one that chose the
// same port): a child that fails with AddrInUse is started again on new
// addresses, as storage/etcd/etcdtest does with its members.
func Addr(t testing.TB) string {
	t.Helper()
	lo, hi := belowEphemeral()
	given.Lock()
	defer given.Unlock()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		if given.ports[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		given.ports[port] = true
		return addr
	}
	t.Fatalf("childtest: no free loopback port in %d-%d", lo, hi)
	return ""
}

// belowEphemeral returns the ports [lo, hi) that Addr picks from: the half
// of the ports below the ephemeral range nearest to it, above 10000.
func belowEphemeral() (lo, hi int) {
	hi = 32768 // Linux's default ephemeral range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > 10000+1000 {
			hi = first
		}
	}
	return max(10000, hi/2), hi
}

// AddrInUse reports whether err, or the text a child printed (its error
// output), says that an address was taken by someone else.
func AddrInUse(err error, output string) bool {
	return (err != nil && errors.Is(err, syscall.EADDRINUSE)) || strings.Contains(output, "address already in use")
}
