package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvironmentFlags: every flag can come from PICKET_<FLAG>; a flag on
// the command line wins; a bad value in the environment is a usage error that
// names the variable's flag, and nothing is done.
func TestEnvironmentFlags(t *testing.T) {
	dir := t.TempDir()
	fromEnv, fromFlag := filepath.Join(dir, "env.db"), filepath.Join(dir, "flag.db")
	for _, db := range []string{fromEnv, fromFlag} {
		if r := runPicket(t, "acquire", "-db", db, "-name", "in/"+filepath.Base(db), "-ttl", "1m"); r.code != exitOK {
			t.Fatalf("acquire on %s: exit %d: %s", db, r.code, r.stderr)
		}
	}
	t.Setenv("PICKET_DB", fromEnv)
	t.Setenv("PICKET_PREFIX", "in/")
	if r := runPicket(t, "ls"); r.code != exitOK || !strings.Contains(r.stdout, "in/env.db") || strings.Contains(r.stdout, "flag.db") {
		t.Errorf("ls with PICKET_DB: exit %d, stdout %q, stderr %q; want the lease of env.db only", r.code, r.stdout, r.stderr)
	}
	if r := runPicket(t, "ls", "-db", fromFlag); r.code != exitOK || !strings.Contains(r.stdout, "in/flag.db") || strings.Contains(r.stdout, "env.db") {
		t.Errorf("ls -db with PICKET_DB set: exit %d, stdout %q; want the command line to win", r.code, r.stdout)
	}
	t.Setenv("PICKET_TTL", "forever")
	r := runPicket(t, "acquire", "-name", "in/bad-env")
	if r.code != exitUsage || !strings.Contains(r.stderr, "ttl") {
		t.Errorf("acquire with PICKET_TTL=forever: exit %d, stderr %q; want usage error naming ttl", r.code, r.stderr)
	}
	t.Setenv("PICKET_TTL", "")
	if r := runPicket(t, "get", "-name", "in/bad-env"); r.code != exitNotFound {
		t.Errorf("get after the refused acquire: exit %d, stdout %q; want not found (nothing was done)", r.code, r.stdout)
	}
}

// TestStoreFromCommandLineWins: with PICKET_SERVER (and its token file)
// exported, as the README suggests, a -db on the command line is used and the
// environment's store ignored; two stores named in one place are a usage
// error that says where each came from, and nothing is done.
func TestStoreFromCommandLineWins(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	if r := runPicket(t, "acquire", "-db", db, "-name", "wins/x", "-ttl", "1m"); r.code != exitOK {
		t.Fatalf("acquire -db: exit %d: %s", r.code, r.stderr)
	}
	t.Setenv("PICKET_SERVER", "http://127.0.0.1:1")
	t.Setenv("PICKET_AUTH_TOKEN_FILE", filepath.Join(dir, "no-such-token"))
	t.Setenv("PICKET_ETCD", "127.0.0.1:1")
	if r := runPicket(t, "ls", "-db", db); r.code != exitOK || !strings.Contains(r.stdout, "wins/x") {
		t.Errorf("ls -db with PICKET_SERVER and PICKET_ETCD set: exit %d, stdout %q, stderr %q; want the file's lease", r.code, r.stdout, r.stderr)
	}
	t.Setenv("PICKET_ETCD", "")
	t.Setenv("PICKET_DB", db)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"both in the environment", []string{"ls"}, []string{"-db (PICKET_DB in the environment)", "-server (PICKET_SERVER in the environment)"}},
		{"both on the command line", []string{"ls", "-db", db, "-server", "127.0.0.1:1"}, []string{"-db (command line)", "-server (command line)"}},
		{"bench, both in the environment", []string{"bench", "-c", "1", "-d", "1s"}, []string{"-db (PICKET_DB in the environment)", "-server (PICKET_SERVER in the environment)"}},
		{"token file on the command line without -server", []string{"ls", "-db", db, "-auth-token-file", "tok"}, []string{"-auth-token-file (command line) needs -server"}},
	} {
		r := runPicket(t, c.args...)
		if r.code != exitUsage {
			t.Errorf("%s: picket %v: exit %d, stderr %q; want %d (usage)", c.name, c.args, r.code, r.stderr, exitUsage)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: picket %v: stderr %q; want it to say %q", c.name, c.args, r.stderr, w)
			}
		}
	}
	t.Setenv("PICKET_SERVER", "")
	t.Setenv("PICKET_AUTH_TOKEN_FILE", "")
	if r := runPicket(t, "get", "-name", "wins/x"); r.code != exitOK {
		t.Errorf("get after the refused commands: exit %d, stderr %q; want the lease still there", r.code, r.stderr)
	}
}

// TestServerWithoutScheme: -server host:port means http://host:port.
func TestServerWithoutScheme(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "p.db"))
	bare := strings.TrimPrefix(s.url, "http://")
	if r := runPicket(t, "acquire", "-server", bare, "-name", "bare/a", "-ttl", "1m"); r.code != exitOK {
		t.Fatalf("acquire -server %s: exit %d: %s", bare, r.code, r.stderr)
	}
	if r := runPicket(t, "get", "-server", s.url, "-name", "bare/a"); r.code != exitOK {
		t.Errorf("get -server %s: exit %d: %s", s.url, r.code, r.stderr)
	}
}

// TestVersion: "picket version" and "picket -version" print the module
// version, the VCS revision the binary was built from and the Go version.
func TestVersion(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout to compare with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "picket")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if info, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(info), "vcs.revision=") {
		// A git worktree, say: Go stamps no revision there (err %v).
		t.Skipf("go build stamped no VCS revision in this checkout (%v)", err)
	}
	for _, args := range [][]string{{"version"}, {"-version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("picket %v: %v", args, err)
		}
		line := string(out)
		if !strings.HasPrefix(line, "picket ") || !strings.Contains(line, "rev "+string(head[:12])) || !strings.Contains(line, "go1.") {
			t.Errorf("picket %v = %q; want the version, rev %s and the Go version", args, line, head[:12])
		}
	}
}

// TestErrorsNameThingsOnce: an error names the call and the lease once, not
// once per layer it passed through.
func TestErrorsNameThingsOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	for _, args := range [][]string{
		{"release", "-db", db, "-name", "jobs/nightly", "-holder", "h", "-token", "1"},
		{"renew", "-db", db, "-name", "jobs/nightly", "-holder", "h", "-token", "1"},
		{"get", "-db", db, "-name", "jobs/nightly"},
	} {
		r := runPicket(t, args...)
		if r.code == exitOK || strings.Count(r.stderr, `"jobs/nightly"`) != 1 || strings.Count(r.stderr, args[0]) != 1 {
			t.Errorf("picket %s: exit %d, stderr %q; want the call and the name once each", args[0], r.code, r.stderr)
		}
	}
}
