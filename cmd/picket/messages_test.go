package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorMessages: what the trial found unclear. No path or name twice,
// no "lease: not found" for a key, a missing directory said as such, a
// duration without a unit answered with the unit, "picket kv -h" as help,
// and a "picket help" that names no source file and shows -etcd.
func TestErrorMessages(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	missing := filepath.Join(dir, "no-such-dir", "x.db")
	if r := runPicket(t, "acquire", "-db", db, "made", "-ttl", "1s"); r.code != exitOK { // kv get creates no store
		t.Fatalf("acquire: exit %d: %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		want    string // in stderr
		notWant string // not in stderr
		once    string // at most once in stderr
	}{
		{"missing key", []string{"kv", "get", "-db", db, "nokey"}, exitNotFound, `get fenced "nokey": no such key`, "lease: not found", `"nokey"`},
		{"missing directory", []string{"ls", "-db", missing}, exitUsage, "directory " + filepath.Dir(missing) + " does not exist", "", missing}, // a read creates no store (issue 37)
		{"missing directory, acquire", []string{"acquire", "-db", missing, "a"}, exitError, "directory " + filepath.Dir(missing) + " does not exist (the file is created, its directory is not)", "", missing},
		{"a directory", []string{"ls", "-db", dir}, exitError, "sqlite: open " + dir + ": is a directory", "", "open"},
		{"-ttl without a unit", []string{"acquire", "-db", db, "-name", "a", "-ttl", "10"}, exitUsage, "-ttl takes a duration with a unit: 10s", "", ""},
		{"-ttl not a number", []string{"acquire", "-db", db, "-name", "a", "-ttl", "x"}, exitUsage, `invalid value "x"`, "takes a duration", ""},
	} {
		r := runPicket(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: picket %v: exit %d, stderr %q; want %d and %q", c.name, c.args, r.code, r.stderr, c.code, c.want)
		}
		if c.notWant != "" && strings.Contains(r.stderr, c.notWant) {
			t.Errorf("%s: stderr %q says %q", c.name, r.stderr, c.notWant)
		}
		if c.once != "" && strings.Count(r.stderr, c.once) > 1 {
			t.Errorf("%s: stderr %q has %q more than once", c.name, r.stderr, c.once)
		}
	}
	t.Setenv("PICKET_TTL", "5")
	if r := runPicket(t, "acquire", "-db", db, "-name", "a"); r.code != exitUsage || !strings.Contains(r.stderr, "PICKET_TTL") || !strings.Contains(r.stderr, "5s for seconds") {
		t.Errorf("PICKET_TTL=5: exit %d, stderr %q; want a usage error suggesting 5s", r.code, r.stderr)
	}
	t.Setenv("PICKET_TTL", "")

	r := runPicket(t, "kv", "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "picket kv put") || !strings.Contains(r.stdout, "picket kv get") || r.stderr != "" {
		t.Errorf("picket kv -h: exit %d, stdout %q, stderr %q; want the kv usage on stdout, exit 0", r.code, r.stdout, r.stderr)
	}
	r = runPicket(t, "help")
	if strings.Contains(r.stdout, ".go") {
		t.Errorf("picket help names a source file:\n%s", r.stdout)
	}
	for _, cmd := range []string{"run", "acquire", "renew", "release", "ls", "get", "kv"} {
		usage := r.stdout[strings.Index(r.stdout, "picket "+cmd+" "):]
		usage = usage[:strings.Index(usage, "\n  picket ")]
		if !strings.Contains(usage, "-etcd URLS") {
			t.Errorf("picket help: the usage of %s does not show -etcd:\n%s", cmd, usage)
		}
	}
}
