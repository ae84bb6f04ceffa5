package redisfence_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/redisfence"
)

// TestCluster: the fenced writes through go-redis's ClusterClient on a
// real three-master Redis Cluster (three redis-server processes on
// 127.0.0.1, joined by redis-cli --cluster create), for keys spread over
// every master, with and without hash tags. Each key's script names the
// data key and its fence key: a cluster refuses a script whose keys lie in
// two slots (CROSSSLOT), so every write succeeding, every stale one being
// refused with the highest token, and each fence key living on its data
// key's master is what FenceKey's same-slot rule buys. The control is the
// same script with a fence key that ignores the rule, which the cluster
// refuses.
func TestCluster(t *testing.T) {
	needRedis(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (Debian's redis-tools, which redis-server brings) is needed to create a cluster: %v", err)
	}
	var addrs []string
	for range 3 {
		_, s := newRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		addrs = append(addrs, s.addr)
	}
	out, err := exec.CommandContext(t.Context(), cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	// The cluster is usable once every node agrees every slot is served.
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not become ok within 30 s: %v\n%s", err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}

	masters := map[string]bool{}
	for i := range 60 {
		key := fmt.Sprintf("jobs:%d", i)
		if i%3 == 1 {
			key = fmt.Sprintf("{user:%d}:name", i)
		}
		if err := redisfence.Set(ctx, c, key, 10, "ten"); err != nil {
			t.Fatalf("Set(%q, 10): %v", key, err)
		}
		if err := redisfence.HSet(ctx, c, key+":h", 10, "f", "v"); err != nil {
			t.Fatalf("HSet(%q, 10): %v", key+":h", err)
		}
		err := redisfence.Set(ctx, c, key, 9, "nine")
		var se *token.StaleError
		if !errors.As(err, &se) || se.Highest != 10 {
			t.Fatalf("Set(%q, 9) after 10: %v; want a *StaleError with highest 10", key, err)
		}
		if err := redisfence.Del(ctx, c, key, 11); err != nil {
			t.Fatalf("Del(%q, 11): %v", key, err)
		}
		if err := redisfence.Set(ctx, c, key, 10, "ten again"); !errors.Is(err, token.ErrStale) {
			t.Fatalf("Set(%q, 10) after Del with 11: %v; want ErrStale", key, err)
		}
		if h, err := redisfence.Highest(ctx, c, key); err != nil || h != 11 {
			t.Fatalf("Highest(%q) = %d, %v; want 11", key, h, err)
		}
		// The fence key lives on the data key's master.
		fk, _ := redisfence.FenceKey(key)
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := m.Exists(ctx, fk).Result(); err != nil || n != 1 {
			t.Fatalf("%q's fence %q is not on its master %s: %d, %v", key, fk, m.Options().Addr, n, err)
		}
		fenceNode := m.Options().Addr
		masters[fenceNode] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the keys landed on %d masters, want all 3: the test did not cross the cluster", len(masters))
	}

	// The control: a fence key beside the data key but outside its slot
	// ("jobs:0:picket-fence", untagged) makes the script's keys cross slots.
	const script = `redis.call('SET', KEYS[2], ARGV[1]); return redis.call('SET', KEYS[1], ARGV[2])`
	err = c.Eval(ctx, script, []string{"jobs:0", "jobs:0" + redisfence.FenceSuffix}, 12, "x").Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over jobs:0 and an untagged fence key: %v; want the cluster's CROSSSLOT refusal", err)
	}
}
