package etcd_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
)

// TestOpenBadOptions: an option out of range, or no endpoint, is
// lease.ErrInvalid from Open, which returns no store and makes no client:
// the listener standing in for a member is never dialled. Zero durations
// and counts and a nil logger mean the defaults (decision 2 of issue 26):
// Open accepts them and, with them, does dial.
func TestOpenBadOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case dialled <- struct{}{}:
			default:
			}
		}
	}()
	endpoints := []string{"http://" + ln.Addr().String()}
	for _, tc := range []struct {
		name      string
		endpoints []string
		opts      []etcd.Option
	}{
		{"no endpoint", nil, nil},
		{"empty prefix", endpoints, []etcd.Option{etcd.WithPrefix("")}},
		{"negative lock delay", endpoints, []etcd.Option{etcd.WithLockDelay(-time.Second)}},
		{"lock delay over the maximum", endpoints, []etcd.Option{etcd.WithLockDelay(lease.MaxLockDelay + time.Millisecond)}},
		{"negative dial timeout", endpoints, []etcd.Option{etcd.WithDialTimeout(-time.Second)}},
		{"negative request timeout", endpoints, []etcd.Option{etcd.WithRequestTimeout(-time.Second)}},
		{"negative max leases", endpoints, []etcd.Option{etcd.WithMaxLeases(-1)}},
		{"negative max kv keys", endpoints, []etcd.Option{etcd.WithMaxKVKeys(-1)}},
		{"negative max kv bytes", endpoints, []etcd.Option{etcd.WithMaxKVBytes(-1)}},
		{"negative history", endpoints, []etcd.Option{etcd.WithHistory(-1, 0)}},
		{"username without password", endpoints, []etcd.Option{etcd.WithAuth("root", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := etcd.Open(tc.endpoints, tc.opts...)
			if !errors.Is(err, lease.ErrInvalid) || st != nil {
				if st != nil {
					st.Close()
				}
				t.Fatalf("Open = %v, %v; want nil, lease.ErrInvalid", st, err)
			}
		})
	}
	select {
	case <-dialled:
		t.Fatal("a refused Open dialled the endpoint")
	default:
	}

	// The control: zero values and a nil logger are the defaults, and such
	// a store dials its endpoint (in the background) at once.
	st, err := etcd.Open(endpoints, etcd.WithDialTimeout(0), etcd.WithRequestTimeout(time.Second),
		etcd.WithLogger(nil), etcd.WithMaxLeases(0), nil)
	if err != nil {
		t.Fatalf("Open with zero values: %v", err)
	}
	defer st.Close()
	select {
	case <-dialled:
	case <-time.After(time.Minute):
		t.Fatal("the control store never dialled its endpoint")
	}
}
