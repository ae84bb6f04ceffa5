//go:build linux

package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The chaos test on a real etcd cluster: three etcd member processes on
// loopback, two "picket serve -etcd" in front (the workers take the lease
// through the first and write through the second), five worker processes on
// one lease (300 ms asked; etcd grants its minimum, one second), paused with
// SIGSTOP for 0.5–3 s (past etcd's TTL). Faults on top: the first server is
// killed with SIGKILL and restarted three times, each time after killing
// the etcd leader with SIGKILL and restarting it on its data; every 5 s one
// member is stopped with SIGSTOP for a second. The checker is the SQLite chaos
// test's (chaos_check_test.go): no token twice, tokens rising across every
// restart, no stale write accepted, stale writes really refused.
//
// The short run takes 20–45 s; PICKET_SOAK=1 runs 2–4 minutes.

func etcdChaosPlan() chaosPlan {
	p := defaultPlan()
	p.base, p.limit = 20*time.Second, 45*time.Second
	if os.Getenv("PICKET_SOAK") == "1" {
		p.base, p.limit, p.restarts = 2*time.Minute, 4*time.Minute, 20
	}
	return p
}

// etcdChaos is the cluster and the two servers of a run.
type etcdChaos struct {
	cluster *etcdCluster
	leases  *server // workers take leases here; killed and restarted
	kv      *server // workers write here
	args    []string
}

func startEtcdChaos(t *testing.T) *etcdChaos {
	c := startEtcdCluster(t, 3)
	args := []string{"-etcd", strings.Join(c.endpoints, ","), "-etcd-prefix", "chaos"}
	return &etcdChaos{cluster: c, leases: startServe(t, args...), kv: startServe(t, args...), args: args}
}

// pauseMembers stops a member with SIGSTOP for a second every 5 s until
// stop is closed, and returns how many it paused.
func (e *etcdChaos) pauseMembers(stop <-chan struct{}) func() int {
	var wg sync.WaitGroup
	n := 0
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Second):
			}
			e.cluster.pause(i%len(e.cluster.members), time.Second)
			n++
		}
	})
	return func() int { wg.Wait(); return n }
}

func TestChaosEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	e := startEtcdChaos(t)
	plan := etcdChaosPlan()
	plan.done = func(r *chaosRun) bool { return r.rejected() > 0 }
	r := newChaosRun(t, plan, e.leases.url, e.kv.url)
	r.pauseUnit = time.Second
	r.servers = []*server{e.leases}
	leaderKills := 0
	r.restart = func() *server {
		if e.cluster.killLeader() >= 0 {
			leaderKills++
		}
		return startServe(t, append(e.args, "-addr", strings.TrimPrefix(e.leases.url, "http://"))...)
	}
	stop := make(chan struct{})
	memberPauses := e.pauseMembers(stop)
	r.run()
	close(stop)
	t.Logf("etcd faults: %d leader kills, %d member pauses", leaderKills, memberPauses())

	h := r.history()
	r.report(h)
	for _, v := range h.violations() {
		t.Error(v)
	}
	if r.rejected() == 0 {
		t.Errorf("no stale write was rejected in %v with %d pauses", r.elapsed, r.pauses)
	}
	if h.count(outcomeAck) == 0 {
		t.Error("no write was acknowledged")
	}
	if len(r.marks) != plan.restarts || leaderKills != plan.restarts {
		t.Errorf("%d restarts and %d leader kills, want %d", len(r.marks), leaderKills, plan.restarts)
	}
	if _, judged := h.judgeRestarts(); judged == 0 {
		t.Error("no grant was asked for after a restart: the restart check judged nothing")
	}
	_, highest, err := client(t, e.kv.url).GetFenced(context.Background(), chaosKey)
	if err != nil {
		t.Fatalf("GetFenced(%q): %v", chaosKey, err)
	}
	for _, w := range h.writes {
		if w.outcome == outcomeAck && w.token > uint64(highest) {
			t.Errorf("the key's highest token is %d, below the acknowledged token %d", highest, w.token)
		}
	}
}

// TestChaosEtcdUnfencedControl: the same cluster, servers and pauses, with
// the writes going to a store without a fence: the checker must find the
// lost update that the fence prevents.
func TestChaosEtcdUnfencedControl(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	e := startEtcdChaos(t)
	plan := etcdChaosPlan()
	plan.restarts = 0
	plan.base = 2 * time.Second
	plan.done = func(r *chaosRun) bool {
		h, err := buildHistory(r.snapshot(), nil)
		return err == nil && len(h.lostUpdates()) > 0
	}
	kv := newUnfencedKV()
	ts := httptest.NewServer(kv)
	t.Cleanup(ts.Close)
	r := newChaosRun(t, plan, e.leases.url, ts.URL)
	r.pauseUnit = time.Second
	r.run()

	h := r.history()
	r.report(h)
	lost := h.lostUpdates()
	if len(lost) == 0 {
		t.Fatalf("the checker found no lost update in %v of an unfenced run with %d pauses", r.elapsed, r.pauses)
	}
	t.Logf("the checker caught %d lost updates without a fence; the first: %s", len(lost), lost[0])
	if v := h.duplicateTokens(); len(v) > 0 {
		t.Errorf("the lease server broke the promise in the control run: %q", v)
	}
}
