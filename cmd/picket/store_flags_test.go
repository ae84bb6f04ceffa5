package main

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStoreFlagsEveryCommand: every command that works on a store
// registers the one set of store flags (storeFlags.register), serve, bench
// and backup included, rather than declaring its own -db or
// -auth-token-file: each command's -h lists every one of them. restore
// names its files as arguments and takes only the etcd flags; version and
// help have no store, and fence works on a file of the user's data, not
// on a store.
func TestStoreFlagsEveryCommand(t *testing.T) {
	shared := flag.NewFlagSet("shared", flag.ContinueOnError)
	var sf storeFlags
	sf.register(shared)
	var names []string
	shared.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) < 10 {
		t.Fatalf("the shared store flags are %v: too few to be the whole set", names)
	}
	for _, c := range commands() {
		if c.run == nil || c.name == "version" || c.name == "restore" || c.name == "fence" {
			continue
		}
		args := []string{c.name, "-h"}
		if c.name == "kv" {
			args = []string{"kv", "get", "-h"}
		}
		var out syncBuffer
		if code := Main(context.Background(), args, strings.NewReader(""), &out, &out); code != exitOK {
			t.Errorf("picket %s: exit %d:\n%s", strings.Join(args, " "), code, out.String())
			continue
		}
		for _, n := range names {
			if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(n) + `( |$)`).MatchString(out.String()) {
				t.Errorf("picket %s does not take the store flag -%s", c.name, n)
			}
		}
	}
}

// TestServeStoreFlags: serve takes the shared store flags and fronts its
// own store (-db or -etcd): a client's flags (-server and its TLS) on the
// command line are a usage error that says what serve takes instead, and
// nothing is created; exported in the environment for the clients, they
// are ignored. -auth-token-file (serve's name for the token it requires
// until issue 26, and again since issue 37: the clients' name for the same
// credential) and -require-token-file (its name in between) both require
// it: a server started with either must not come up open.
func TestServeStoreFlags(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"server", []string{"-server", "http://127.0.0.1:1"}, "-auth-token-file"},
		{"client TLS", []string{"-ca", tok}, "-tls-cert"},
		{"db and etcd", []string{"-etcd", "127.0.0.1:1"}, "exclude each other"},
		{"two token names", []string{"-require-token-file", tok, "-auth-token-file", other}, "old name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "p.db")
			var logs syncBuffer
			args := append([]string{"serve", "-addr", "127.0.0.1:0", "-db", db}, tc.args...)
			code := Main(context.Background(), args, strings.NewReader(""), &logs, &logs)
			if code != exitUsage || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("picket %v: exit %d, want %d naming %q:\n%s", args, code, exitUsage, tc.want, logs.String())
			}
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("picket %v: the database file exists (%v); a refused flag changes nothing", args, err)
			}
		})
	}

	t.Run("client flags in the environment", func(t *testing.T) {
		t.Setenv("PICKET_SERVER", "http://127.0.0.1:1")
		t.Setenv("PICKET_CA", filepath.Join(dir, "no-such-ca"))
		url, stop := serveForTest(t, "-db", tempDB(t))
		defer stop()
		if code := get(t, url+"/v1/leases", ""); code != http.StatusOK {
			t.Errorf("GET /v1/leases: %d, want 200 (no token required)", code)
		}
	})
	t.Run("command line wins over PICKET_AUTH_TOKEN_FILE", func(t *testing.T) {
		t.Setenv("PICKET_AUTH_TOKEN_FILE", other)
		url, stop := serveForTest(t, "-db", tempDB(t), "-require-token-file", tok)
		defer stop()
		if code := get(t, url+"/v1/leases", "s3cret"); code != http.StatusOK {
			t.Errorf("GET /v1/leases with -require-token-file's token: %d, want 200", code)
		}
	})
	for _, name := range []string{"-require-token-file", "-auth-token-file"} {
		t.Run(name, func(t *testing.T) {
			url, stop := serveForTest(t, "-db", tempDB(t), name, tok)
			defer stop()
			if code := get(t, url+"/v1/leases", ""); code != http.StatusUnauthorized {
				t.Errorf("GET /v1/leases without the token: %d, want 401", code)
			}
			if code := get(t, url+"/v1/leases", "s3cret"); code != http.StatusOK {
				t.Errorf("GET /v1/leases with the token: %d, want 200", code)
			}
		})
	}
}

// TestBackupStoreFlags: backup copies an SQLite file: -server and -etcd
// are usage errors that say so; a -server exported for the clients is
// ignored.
func TestBackupStoreFlags(t *testing.T) {
	db := tempDB(t)
	if r := runPicket(t, "acquire", "-db", db, "-name", "b", "-ttl", "1m"); r.code != exitOK {
		t.Fatalf("acquire: %s", r.stderr)
	}
	for _, args := range [][]string{
		{"-db", db, "-server", "http://127.0.0.1:1"},
		{"-etcd", "127.0.0.1:1"},
	} {
		out := filepath.Join(t.TempDir(), "copy.db")
		r := runPicket(t, append(append([]string{"backup"}, args...), out)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "backup copies an SQLite file") {
			t.Errorf("backup %v: exit %d, stderr %q; want usage, saying what backup copies", args, r.code, r.stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("backup %v wrote %s (%v)", args, out, err)
		}
	}
	t.Setenv("PICKET_SERVER", "http://127.0.0.1:1")
	out := filepath.Join(t.TempDir(), "copy.db")
	if r := runPicket(t, "backup", "-db", db, out); r.code != exitOK {
		t.Errorf("backup -db with PICKET_SERVER exported: exit %d: %s", r.code, r.stderr)
	}
}

// serveForTest runs serve in this process with args and the address from
// -addr-file; stop cancels it and requires exit status 0.
func serveForTest(t *testing.T, args ...string) (url string, stop func()) {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	code := serveInProcess(ctx, logs, append([]string{"-addr", "127.0.0.1:0", "-addr-file", addrFile}, args...)...)
	addr := waitAddrFile(t, addrFile, code, logs)
	return "http://" + addr, func() {
		cancel()
		if c := waitExit(t, code, logs, time.Minute); c != exitOK {
			t.Errorf("serve %v: exit %d, want 0:\n%s", args, c, logs)
		}
	}
}

// get returns the status of GET url, with the bearer token tok if given.
func get(t *testing.T, url, tok string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitAddrFile waits for serve (its exit status to come on code) to write
// its address to addrFile, and returns it.
func waitAddrFile(t *testing.T, addrFile string, code <-chan int, logs *syncBuffer) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			return strings.TrimSpace(string(b))
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited (%d) before listening:\n%s", c, logs)
		case <-deadline:
			t.Fatalf("serve did not write its address within 30s:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
