package main

import (
	"testing"

	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestBenchEtcd: bench takes the shared store flags, -etcd among them (it
// declared its own -db and -server before issue 26 and had no -etcd): a
// short run on a real etcd member prints a row per workload, names the
// store, and releases every lease it took (a cluster is shared, like a
// server).
func TestBenchEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	r := runPicket(t, "bench", "-etcd", c.Endpoints[0], "-etcd-prefix", "bench-test", "-d", "200ms", "-c", "2", "-json")
	if r.code != exitOK {
		t.Fatalf("picket bench -etcd: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	rows := decodeBenchRows(t, r)
	checkBenchRows(t, rows, []string{"distinct 2", "fresh 2", "hot 2"})
	if rows[0].Store != "etcd" {
		t.Errorf("row settings: store %q, want etcd", rows[0].Store)
	}
	ls := runPicket(t, "ls", "-etcd", c.Endpoints[0], "-etcd-prefix", "bench-test", "-json")
	if ls.code != exitOK || ls.stdout != "{\"leases\":[]}\n" {
		t.Errorf("after bench -etcd, ls -json (exit %d): %q; want no lease left", ls.code, ls.stdout)
	}
	if r := runPicket(t, "bench", "-etcd", c.Endpoints[0], "-procs", "2"); r.code != exitUsage {
		t.Errorf("bench -etcd -procs: exit %d, want %d (usage: -procs measures a file)", r.code, exitUsage)
	}
}
