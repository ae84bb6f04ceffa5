package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKV: picket kv put, get and delete in both store modes, with the
// fencing rules the store enforces (a never-issued token is refused, a lower
// one is stale and exits 4, a delete keeps the fence), and the token taken
// from $PICKET_TOKEN as picket run sets it.
func TestKV(t *testing.T) {
	srv := startServer(t, filepath.Join(t.TempDir(), "srv.db"))
	for _, mode := range [][]string{{"-db", filepath.Join(t.TempDir(), "kv.db")}, {"-server", srv.url}} {
		t.Run(mode[0], func(t *testing.T) {
			with := func(args ...string) []string { return append(args, mode...) }
			kv := func(verb string, args ...string) result {
				t.Helper()
				return runPicket(t, append(with("kv", verb), args...)...)
			}
			if r := kv("put", "-token", "1", "jobs/out", "early"); r.code != exitUsage || !strings.Contains(r.stderr, "never issued") {
				t.Errorf("put with a token never issued: exit %d, stderr %q; want 2 and why", r.code, r.stderr)
			}
			var toks []string
			for _, name := range []string{"kv/a", "kv/b"} {
				r := runPicket(t, with("acquire", "-name", name, "-ttl", "1m")...)
				var g struct {
					Token json.Number `json:"token"`
				}
				if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &g) != nil {
					t.Fatalf("acquire %s: exit %d: %s%s", name, r.code, r.stdout, r.stderr)
				}
				toks = append(toks, g.Token.String())
			}
			older, newer := toks[0], toks[1]
			if r := kv("put", "-token", newer, "jobs/out", "from B"); r.code != exitOK {
				t.Fatalf("put with token %s: exit %d: %s", newer, r.code, r.stderr)
			}
			if r := kv("put", "-token", older, "jobs/out", "from A, late"); r.code != exitLost || !strings.Contains(r.stderr, "stale") {
				t.Errorf("put with the older token: exit %d, stderr %q; want 4 (stale)", r.code, r.stderr)
			}
			if r := kv("get", "jobs/out"); r.code != exitOK || r.stdout != "from B" {
				t.Errorf("get = exit %d, %q; want the newer writer's value, raw", r.code, r.stdout)
			}
			r := kv("get", "-json", "jobs/out")
			var got kvAnswer
			if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Value == nil || *got.Value != "from B" || got.Token.String() != newer {
				t.Errorf("get -json = exit %d, %q", r.code, r.stdout)
			}
			if r := kv("delete", "-token", newer, "jobs/out"); r.code != exitOK || !strings.Contains(r.stdout, `"deleted":true`) {
				t.Errorf("delete: exit %d, %q %q", r.code, r.stdout, r.stderr)
			}
			if r := kv("get", "jobs/out"); r.code != exitNotFound {
				t.Errorf("get after delete: exit %d; want 5", r.code)
			}
			if r := kv("put", "-token", older, "jobs/out", "from A, after the delete"); r.code != exitLost {
				t.Errorf("put with the older token after the delete: exit %d; want 4: the delete keeps the fence", r.code)
			}
			// Under picket run the command finds its token in $PICKET_TOKEN.
			run := append(with("run", "-name", "kv/run", "-ttl", "1m"), "--", os.Args[0], "kv", "put")
			run = append(run, mode...)
			if r := runPicket(t, append(run, "jobs/out", "from run")...); r.code != exitOK {
				t.Fatalf("picket run -- picket kv put: exit %d: %s", r.code, r.stderr)
			}
			if r := kv("get", "jobs/out"); r.stdout != "from run" {
				t.Errorf("get after the run = %q; want the run's value", r.stdout)
			}
			for _, args := range [][]string{{"put", "jobs/out"}, {"get"}, {"delete", "-token", "x", "k"}, {"frob", "k"}} {
				if r := kv(args[0], args[1:]...); r.code != exitUsage {
					t.Errorf("kv %v: exit %d; want 2", args, r.code)
				}
			}
		})
	}
}
