package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nameForms are the ways to name the lease (issue 37): the argument before
// the flags, after them, and -name, the synonym kept for old scripts.
var nameForms = []struct {
	form string
	args func(cmd, name string, flags, tail []string) []string
}{
	{"NAME first", func(cmd, name string, flags, tail []string) []string {
		return join([]string{cmd, name}, flags, tail)
	}},
	{"NAME after the flags", func(cmd, name string, flags, tail []string) []string {
		return join([]string{cmd}, flags, []string{name}, tail)
	}},
	{"-name NAME", func(cmd, name string, flags, tail []string) []string {
		return join([]string{cmd, "-name", name}, flags, tail)
	}},
}

func join(parts ...[]string) []string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// TestNameGrammar: every command that acts on one lease (acquire, get,
// renew, watch, history, release, revoke, run) takes the name as its first
// argument, after its flags, or as -name, and does the same with each, on a
// real SQLite file: the lease acquired under one form is the one the
// others get, renew, watch, find in the history, release and revoke.
func TestNameGrammar(t *testing.T) {
	db := tempDB(t)
	store := []string{"-db", db}
	for _, f := range nameForms {
		t.Run(f.form, func(t *testing.T) {
			name := "grammar/" + strings.ReplaceAll(f.form, " ", "-")
			picketOK := func(cmd string, flags, tail []string) result {
				t.Helper()
				args := f.args(cmd, name, append(append([]string{}, store...), flags...), tail)
				r := runPicket(t, args...)
				if r.code != exitOK {
					t.Fatalf("picket %v: exit %d, stderr %q; want 0", args, r.code, r.stderr)
				}
				return r
			}
			r := picketOK("acquire", []string{"-ttl", "1m", "-print", "holder,token"}, nil)
			holder, tok, _ := strings.Cut(strings.TrimSpace(r.stdout), " ")
			if r := picketOK("get", []string{"-print", "name,token"}, nil); strings.TrimSpace(r.stdout) != name+" "+tok {
				t.Errorf("get: %q, want %q", r.stdout, name+" "+tok)
			}
			if r := picketOK("renew", []string{"-holder", holder, "-token", tok, "-print", "token"}, nil); strings.TrimSpace(r.stdout) != tok {
				t.Errorf("renew: %q, want token %s", r.stdout, tok)
			}
			if r := picketOK("watch", []string{"-count", "1"}, nil); !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "token "+tok) {
				t.Errorf("watch: %q, want the lease %s held with token %s", r.stdout, name, tok)
			}
			if r := picketOK("history", []string{"-json"}, nil); strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"name":"`+name+`"`) {
				t.Errorf("history: %q, want the one grant of %s", r.stdout, name)
			}
			if r := picketOK("release", []string{"-holder", holder, "-token", tok}, nil); !strings.Contains(r.stdout, `"released":true`) {
				t.Errorf("release: %q", r.stdout)
			}
			picketOK("acquire", []string{"-ttl", "1m"}, nil)
			if r := picketOK("revoke", []string{"-reason", "test"}, nil); !strings.Contains(r.stdout, `"name":"`+name+`"`) {
				t.Errorf("revoke: %q, want the lease %s", r.stdout, name)
			}
			out := filepath.Join(t.TempDir(), "ran")
			picketOK("run", []string{"-ttl", "10s"}, []string{"--", "sh", "-c", `echo "$PICKET_LEASE" > "$0"`, out})
			if got := strings.TrimSpace(readFile(t, out)); got != name {
				t.Errorf("run: the command saw PICKET_LEASE=%q, want %q", got, name)
			}
		})
	}
}

// TestNameUsage: both forms naming different leases, no name, and an
// argument too many are usage errors of one line (exit 2) that say what
// was wrong and where the flags are, for each command; both forms naming
// the same lease are one name.
func TestNameUsage(t *testing.T) {
	db := tempDB(t)
	if r := runPicket(t, "acquire", "-db", db, "same", "-name", "same", "-ttl", "1m"); r.code != exitOK {
		t.Errorf("acquire same -name same: exit %d, stderr %q; want 0 (one name)", r.code, r.stderr)
	}
	for _, cmd := range []string{"acquire", "get", "renew", "release", "revoke", "watch", "history", "run"} {
		tail := []string{}
		if cmd == "run" {
			tail = []string{"--", "true"}
		}
		cases := []struct {
			what string
			args []string
			want string
		}{
			{"two names", join([]string{cmd, "-db", db, "a", "-name", "b"}, tail), `NAME "a" and -name "b" name different leases`},
			{"-name first, then NAME", join([]string{cmd, "-db", db, "-name", "b", "a"}, tail), `NAME "a" and -name "b" name different leases`},
			{"no name", []string{cmd, "-db", db}, "want the lease's NAME: picket " + cmd + " NAME"},
			{"an unknown flag", []string{cmd, "x", "-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		}
		if cmd == "run" {
			cases[0].want, cases[1].want = "", "" // run -name b a: "a" is the command (as before); see below
			cases = cases[2:]
		} else if cmd != "history" {
			cases = append(cases, struct {
				what string
				args []string
				want string
			}{"an argument after NAME", []string{cmd, "-db", db, "a", "b"}, `unexpected argument "b" after NAME "a"`})
		} else {
			cases = append(cases[:2], cases[3:]...) // history without a name: every lease's
		}
		for _, c := range cases {
			r := runPicket(t, c.args...)
			wantLine := fmt.Sprintf("picket %s: %s", cmd, c.want)
			suffix := fmt.Sprintf("; see 'picket %s -h'\n", cmd)
			if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "picket "+cmd+": ") ||
				!strings.Contains(r.stderr, wantLine) || !strings.HasSuffix(r.stderr, suffix) {
				t.Errorf("%s: picket %v: exit %d, stderr %q; want %d and one line %q...%q", c.what, c.args, r.code, r.stderr, exitUsage, wantLine, suffix)
			}
		}
	}
	if r := runPicket(t, "run", "-db", db, "-name", "r", "true"); r.code != exitOK {
		t.Errorf("run -name r true: exit %d, stderr %q; want 0: with -name, the arguments are the command", r.code, r.stderr)
	}
}

// TestUsageErrorOneLine: a flag a command does not know is one line on
// stderr, "picket CMD: ...; see 'picket CMD -h'", exit 2, for every
// command; the flag list is what -h prints, not what an error prints.
func TestUsageErrorOneLine(t *testing.T) {
	for _, c := range commands() {
		if c.run == nil {
			continue
		}
		args := []string{c.name, "-no-such-flag"}
		cmd := c.name
		switch c.name {
		case "kv":
			args, cmd = []string{"kv", "get", "-no-such-flag"}, "kv get"
		case "fence":
			args, cmd = []string{"fence", "read", "-no-such-flag"}, "fence read"
		}
		r := runPicket(t, args...)
		want := fmt.Sprintf("picket %s: flag provided but not defined: -no-such-flag; see 'picket %s -h'\n", cmd, cmd)
		if r.code != exitUsage || r.stderr != want || r.stdout != "" {
			t.Errorf("picket %v: exit %d, stderr %q, stdout %q; want %d and only %q", args, r.code, r.stderr, r.stdout, exitUsage, want)
		}
	}
	r := runPicket(t, "acquire", "x", "-ttl", "10")
	if want := "picket acquire: invalid value \"10\" for flag -ttl: parse error; -ttl takes a duration with a unit: 10s for seconds (or 10ms, 10m, 10h); see 'picket acquire -h'\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("acquire -ttl 10: exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, want)
	}
	if r := runPicket(t, "no-such-command"); r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "see 'picket help'") {
		t.Errorf("picket no-such-command: exit %d, stderr %q; want %d and one line pointing at picket help", r.code, r.stderr, exitUsage)
	}
}

// TestReadCommandsCreateNoStore: get, ls, watch, history, health and kv
// get on a -db that does not exist fail with a usage error (exit 2) that
// says there is no such file, and leave the directory empty: no database,
// -reserve, -wal or -shm; a directory that does not exist is said as
// such. acquire, run and kv put create the store.
func TestReadCommandsCreateNoStore(t *testing.T) {
	reads := [][]string{
		{"get", "x"}, {"ls"}, {"watch", "x", "-count", "1"}, {"history"}, {"history", "x"}, {"health"}, {"kv", "get", "k"},
	}
	for _, read := range reads {
		dir := t.TempDir()
		for _, c := range []struct{ db, want string }{
			{filepath.Join(dir, "p.db"), "no such file"},
			{filepath.Join(dir, "no-such-dir", "p.db"), "directory " + filepath.Join(dir, "no-such-dir") + " does not exist"},
		} {
			args := append(append([]string{}, read...), "-db", c.db)
			if read[0] == "kv" { // kv's flags come before KEY: a VALUE may start with '-'
				args = []string{"kv", "get", "-db", c.db, "k"}
			}
			r := runPicket(t, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "creates none") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("picket %v: exit %d, stderr %q; want %d and one line saying %q", args, r.code, r.stderr, exitUsage, c.want)
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("picket %v left %v in its directory (%v); want it empty", args, names(ents), err)
			}
		}
	}
	for _, write := range [][]string{
		{"acquire", "x", "-ttl", "1m"}, {"run", "x", "--", "true"}, {"kv", "put", "-token", "1", "k", "v"},
	} {
		db := filepath.Join(t.TempDir(), "p.db")
		args := append(append([]string{}, write...), "-db", db)
		switch write[0] {
		case "run":
			args = []string{"run", "-db", db, "x", "--", "true"}
		case "kv": // refused (no token 1 was granted in a new store), but the store is made
			args = []string{"kv", "put", "-db", db, "-token", "1", "k", "v"}
		}
		r := runPicket(t, args...)
		if _, err := os.Stat(db); err != nil {
			t.Errorf("picket %v: exit %d, stderr %q; the store was not created: %v", args, r.code, r.stderr, err)
		}
		if write[0] != "kv" && r.code != exitOK {
			t.Errorf("picket %v: exit %d, stderr %q; want 0", args, r.code, r.stderr)
		}
		if r := runPicket(t, "ls", "-db", db); r.code != exitOK {
			t.Errorf("ls on the store %v made: exit %d, stderr %q", write, r.code, r.stderr)
		}
	}
}

func names(ents []os.DirEntry) []string {
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return n
}
