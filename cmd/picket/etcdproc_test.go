//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/picketlock/picket/internal/childtest"
)

// etcdCluster is a cluster of etcd member processes on loopback, with data
// under a test's temporary directory, stopped by pid at the end of the test.
type etcdCluster struct {
	t         testing.TB
	bin       string
	members   []*etcdMember
	endpoints []string
}

type etcdMember struct {
	name   string
	args   []string
	stderr *syncBuffer // what every run of it logged

	mu sync.Mutex // guards p: the chaos loop restarts members while another goroutine pauses them
	p  *childtest.Proc
}

// proc returns the member's current process.
func (m *etcdMember) proc() *childtest.Proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p
}

// etcdBinary returns the etcd server binary: $PICKET_ETCD_BIN, else etcd on
// the PATH (.ci/etcd installs Debian's etcd-server). Without one the test
// is skipped, or fails when PICKET_REQUIRE_ETCD=1.
func etcdBinary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("PICKET_ETCD_BIN"); b != "" {
		return b
	}
	if b, err := exec.LookPath("etcd"); err == nil {
		return b
	}
	if os.Getenv("PICKET_REQUIRE_ETCD") == "1" {
		t.Fatal("no etcd binary (PICKET_ETCD_BIN or etcd on the PATH; .ci/etcd installs it)")
	}
	t.Skip("no etcd binary (PICKET_ETCD_BIN or etcd on the PATH; .ci/etcd installs it)")
	return ""
}

// startEtcdCluster starts n members and waits until every one answers.
// Heartbeat 20 ms and election 200 ms: quick failover on loopback; etcd's
// minimum lease TTL is then one second.
func startEtcdCluster(t testing.TB, n int) *etcdCluster {
	t.Helper()
	return startEtcdClusterOf(t, etcdBinary(t), n, 20, 200)
}

// startEtcdClusterOf starts n members of the etcd binary bin with the
// heartbeat interval and election timeout given in milliseconds.
//
// The members' ports must be known before they start (each is told its
// peers'): childtest.Addr picks them below the kernel's ephemeral range, so
// no connection takes one in the meantime. Should another process bind one
// first all the same, the cluster is started again on new ports (at most
// three times), as storage/etcd/etcdtest does.
func startEtcdClusterOf(t testing.TB, bin string, n, heartbeatMs, electionMs int) *etcdCluster {
	t.Helper()
	for try := 1; ; try++ {
		c, err := tryEtcdCluster(t, bin, n, heartbeatMs, electionMs)
		if err == nil {
			return c
		}
		if !errors.Is(err, errEtcdAddrInUse) || try == 3 {
			t.Fatal(err)
		}
		t.Logf("%v; again on other ports", err)
	}
}

var errEtcdAddrInUse = errors.New("an etcd member's address was taken")

// tryEtcdCluster starts the cluster once and waits a minute at most for a
// leader; a member that exits saying its address is in use stops the wait
// with errEtcdAddrInUse, after the cluster was killed.
func tryEtcdCluster(t testing.TB, bin string, n, heartbeatMs, electionMs int) (*etcdCluster, error) {
	t.Helper()
	c := &etcdCluster{t: t, bin: bin}
	dir := t.TempDir()
	var initial []string
	type ports struct{ client, peer string }
	var ps []ports
	for i := range n {
		p := ports{"http://" + childtest.Addr(t), "http://" + childtest.Addr(t)}
		ps = append(ps, p)
		initial = append(initial, fmt.Sprintf("m%d=%s", i, p.peer))
	}
	for i, p := range ps {
		m := &etcdMember{name: fmt.Sprintf("m%d", i), stderr: &syncBuffer{}, args: []string{
			"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls", p.client, "--advertise-client-urls", p.client,
			"--listen-peer-urls", p.peer, "--initial-advertise-peer-urls", p.peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "picket-chaos",
			"--heartbeat-interval", fmt.Sprint(heartbeatMs), "--election-timeout", fmt.Sprint(electionMs),
			"--logger", "zap", "--log-level", "error",
		}}
		c.members = append(c.members, m)
		c.endpoints = append(c.endpoints, p.client)
		c.start(m)
	}
	killAll := func() {
		for _, m := range c.members {
			c.kill(m)
		}
	}
	t.Cleanup(killAll)
	for end := time.Now().Add(time.Minute); c.leader() < 0; time.Sleep(10 * time.Millisecond) {
		for _, m := range c.members {
			select {
			case <-m.proc().Exited():
				if logs := m.stderr.String(); childtest.AddrInUse(nil, logs) {
					killAll()
					return nil, fmt.Errorf("%w: %s exited: %s", errEtcdAddrInUse, m.name, lastLines(logs, 3))
				}
			default:
			}
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("timed out after %v waiting for the etcd cluster to elect a leader", time.Minute)
		}
	}
	return c, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// start starts m's process (its stderr kept in m.stderr); t.Cleanup kills
// it.
func (c *etcdCluster) start(m *etcdMember) {
	p := childtest.Start(c.t, nil, "", childtest.Options{Exe: c.bin, Args: m.args, Stderr: m.stderr})
	m.mu.Lock()
	m.p = p
	m.mu.Unlock()
}

// kill stops m with SIGKILL, by its pid, and waits for it.
func (c *etcdCluster) kill(m *etcdMember) {
	p := m.proc()
	if p == nil {
		return
	}
	_ = p.Cont()
	_ = p.Kill()
	<-p.Exited()
}

// status asks each member for its status; an unreachable member is left
// out.
func (c *etcdCluster) leader() int {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return -1
	}
	defer cli.Close()
	for i, ep := range c.endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}

// waitHealthy waits until every member answers a status request and one of
// them is the leader.
func (c *etcdCluster) waitHealthy(limit time.Duration) {
	c.t.Helper()
	waitFor(c.t, limit, "the etcd cluster to elect a leader", func() bool { return c.leader() >= 0 })
}

// killLeader kills the leader with SIGKILL and starts it again on the same
// data, returning its index (-1: no leader within 10 s, as while an
// election is under way after the last kill).
func (c *etcdCluster) killLeader() int {
	i := c.leader()
	for end := time.Now().Add(10 * time.Second); i < 0 && time.Now().Before(end); i = c.leader() {
		time.Sleep(100 * time.Millisecond)
	}
	if i < 0 {
		return -1
	}
	c.kill(c.members[i])
	time.Sleep(300 * time.Millisecond) // an election happens without it
	c.start(c.members[i])
	return i
}

// pause stops member i with SIGSTOP for d, then continues it.
func (c *etcdCluster) pause(i int, d time.Duration) {
	p := c.members[i].proc()
	_ = p.Stop()
	time.Sleep(d)
	_ = p.Cont()
}
