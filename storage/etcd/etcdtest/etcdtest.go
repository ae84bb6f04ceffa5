// Package etcdtest runs etcd inside a test process (go.etcd.io/etcd/server/v3/embed):
// one member or a cluster of several, on loopback ports, with their data in
// the test's temporary directory. It is for tests only: importing it links
// the etcd server into the binary.
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Timing of the members: etcd's defaults, a heartbeat of 100 ms and an
// election timeout of 1 s (shorter ones make a loaded machine hold
// elections all the time), so etcd's minimum lease TTL (1.5 election
// timeouts, rounded up to whole seconds) is MinTTL.
const (
	TickMs     = 100
	ElectionMs = 1000
	MinTTL     = 2 * time.Second
)

// Cluster is a running etcd cluster.
type Cluster struct {
	// Endpoints are the members' client URLs.
	Endpoints []string
	members   []*embed.Etcd
	closeOnce sync.Once
}

// Start starts a cluster of n members on loopback and waits until it has a
// leader; t.Cleanup stops it. It fails t if the cluster does not come up
// within a minute.
//
// The members' ports are picked free and bound a moment later, so another
// process can take one in between; Start then tries again on new ports (at
// most three times).
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := StartIn(t.TempDir(), n)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartIn is Start for code without a testing.TB (an Example, through
// TestMain): the members' data go under dir, and the caller stops them with
// Close.
func StartIn(dir string, n int) (*Cluster, error) {
	for try := 1; ; try++ {
		c, err := start(fmt.Sprintf("%s/%d", dir, try), n)
		if err == nil {
			return c, nil
		}
		c.Close()
		if !addrInUse(err) || try == 3 {
			return nil, err
		}
	}
}

func start(dir string, n int) (*Cluster, error) {
	cfgs := make([]*embed.Config, n)
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = fmt.Sprintf("%s/%s", dir, cfg.Name)
		cfg.TickMs, cfg.ElectionMs = TickMs, ElectionMs
		cfg.UnsafeNoFsync = true // the tests kill no process: in-memory durability is enough
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		client, err := freeURL()
		if err != nil {
			return &Cluster{}, err
		}
		peer, err := freeURL()
		if err != nil {
			return &Cluster{}, err
		}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialClusterToken = "picket-test"
		initial = append(initial, fmt.Sprintf("%s=%s", cfg.Name, peer.String()))
		cfgs[i] = cfg
	}
	c := &Cluster{}
	started := make(chan error, n)
	var mu sync.Mutex
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		go func() {
			e, err := embed.StartEtcd(cfg)
			if err == nil {
				mu.Lock()
				c.members = append(c.members, e)
				mu.Unlock()
			}
			started <- err
		}()
		c.Endpoints = append(c.Endpoints, cfg.AdvertiseClientUrls[0].String())
	}
	var startErr error
	for range n {
		if err := <-started; err != nil && startErr == nil {
			startErr = fmt.Errorf("start a member: %w", err)
		}
	}
	if startErr != nil {
		return c, startErr
	}
	for _, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			return c, fmt.Errorf("member %s: %w", e.Config().Name, err)
		case <-time.After(time.Minute):
			return c, fmt.Errorf("member %s not ready within a minute", e.Config().Name)
		}
	}
	return c, nil
}

// Close stops every member.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, e := range c.members {
			wg.Go(e.Close)
		}
		wg.Wait()
	})
}

// addrInUse reports whether err is a port taken by someone else. etcd does
// not always wrap the listener's error, so its text is the fallback.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	addr := l.Addr().String()
	l.Close()
	return url.URL{Scheme: "http", Host: addr}, nil
}
