package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestHelpDocumentsEveryExitCode(t *testing.T) {
	r := runPicket(t, "help")
	if r.code != exitOK {
		t.Fatalf("picket help: exit %d, want 0", r.code)
	}
	for _, code := range []int{exitOK, exitError, exitUsage, exitHeld, exitLost, exitNotFound, exitInterrupted} {
		if !strings.Contains(r.stdout, "\n  "+strconv.Itoa(code)+" ") {
			t.Errorf("picket help does not document exit status %d:\n%s", code, r.stdout)
		}
	}
	for _, c := range commands() {
		if !strings.Contains(r.stdout, "picket "+c.name) {
			t.Errorf("picket help does not show the usage of %q", c.name)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	db := tempDB(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"unknown command", []string{"frobnicate"}},
		{"unknown flag", []string{"ls", "-db", db, "-bogus"}},
		{"acquire without name", []string{"acquire", "-db", db}},
		{"acquire bad ttl", []string{"acquire", "-db", db, "-name", "n", "-ttl", "1ms"}},
		{"acquire control char", []string{"acquire", "-db", db, "-name", "a\x01b"}},
		{"renew zero token", []string{"renew", "-db", db, "-name", "n", "-holder", "h", "-token", "0"}},
		{"renew bad token", []string{"renew", "-db", db, "-name", "n", "-holder", "h", "-token", "x"}},
		{"release missing holder", []string{"release", "-db", db, "-name", "n", "-token", "1"}},
		{"run without command", []string{"run", "-db", db, "-name", "n"}},
		{"run bad ttl", []string{"run", "-db", db, "-name", "n", "-ttl", "48h", "--", "true"}},
		{"db and server", []string{"ls", "-db", db, "-server", "http://127.0.0.1:1"}},
		{"auth without server", []string{"ls", "-db", db, "-auth-token-file", "/nonexistent"}},
		{"bad server url", []string{"ls", "-server", "ftp://x"}},
		{"stray argument", []string{"ls", "-db", db, "extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runPicket(t, tc.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d (usage); stderr:\n%s", r.code, exitUsage, r.stderr)
			}
		})
	}
	// Nothing was written by any of them: a first grant is token 1.
	g := decodeGrant(t, runPicket(t, "acquire", "-db", db, "-name", "n", "-ttl", "1m"))
	if g.Token != 1 {
		t.Errorf("first grant after bad input: token %d, want 1", g.Token)
	}
}

// TestScriptCommands walks acquire, renew, get, ls and release in both modes,
// with the exit status of each outcome.
func TestScriptCommands(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			store := m.flags(t, tempDB(t))
			with := func(args ...string) []string { return append(args, store...) }

			g := decodeGrant(t, runPicket(t, with("acquire", "-name", "jobs/report", "-ttl", "1m", "-owner", "cron@a")...))
			if g.Token == 0 || g.Holder == "" || g.Owner != "cron@a" || g.TTLMillis != 60000 {
				t.Fatalf("acquire printed %+v", g)
			}
			if r := runPicket(t, with("acquire", "-name", "jobs/report", "-ttl", "1m")...); r.code != exitHeld || !strings.Contains(r.stderr, "cron@a") {
				t.Errorf("second acquire: exit %d, stderr %q; want %d naming the owner", r.code, r.stderr, exitHeld)
			}
			// The same holder gets the same grant back.
			again := decodeGrant(t, runPicket(t, with("acquire", "-name", "jobs/report", "-ttl", "1m", "-holder", g.Holder)...))
			if again.Token != g.Token {
				t.Errorf("re-acquire by the holder: token %d, want %d", again.Token, g.Token)
			}
			tok := strconv.FormatUint(g.Token, 10)
			wrong := strconv.FormatUint(g.Token+1, 10)
			if r := runPicket(t, with("renew", "-name", "jobs/report", "-holder", g.Holder, "-token", wrong)...); r.code != exitLost {
				t.Errorf("renew with a wrong token: exit %d, want %d", r.code, exitLost)
			}
			if r := runPicket(t, with("renew", "-name", "jobs/report", "-holder", "not-the-holder", "-token", tok)...); r.code != exitLost {
				t.Errorf("renew with a wrong holder: exit %d, want %d", r.code, exitLost)
			}
			renewed := decodeGrant(t, runPicket(t, with("renew", "-name", "jobs/report", "-holder", g.Holder, "-token", tok, "-ttl", "2m")...))
			if renewed.Token != g.Token || renewed.TTLMillis != 120000 {
				t.Errorf("renew printed %+v", renewed)
			}
			r := runPicket(t, with("get", "-name", "jobs/report")...)
			if r.code != exitOK || !strings.Contains(r.stdout, `"token":`+tok) || strings.Contains(r.stdout, g.Holder) {
				t.Errorf("get: exit %d, stdout %q: want the info without the holder", r.code, r.stdout)
			}
			r = runPicket(t, with("ls", "-prefix", "jobs/")...)
			if r.code != exitOK || !strings.Contains(r.stdout, "jobs/report") || !strings.Contains(r.stdout, "cron@a") {
				t.Errorf("ls: exit %d, stdout %q", r.code, r.stdout)
			}
			r = runPicket(t, with("ls", "-json", "-prefix", "other/")...)
			if r.code != exitOK || strings.TrimSpace(r.stdout) != `{"leases":[]}` {
				t.Errorf("ls -json with no match: exit %d, stdout %q", r.code, r.stdout)
			}
			if r := runPicket(t, with("release", "-name", "jobs/report", "-holder", g.Holder, "-token", tok)...); r.code != exitOK {
				t.Errorf("release: exit %d, stderr %q", r.code, r.stderr)
			}
			if r := runPicket(t, with("release", "-name", "jobs/report", "-holder", g.Holder, "-token", tok)...); r.code != exitLost {
				t.Errorf("second release: exit %d, want %d", r.code, exitLost)
			}
			if r := runPicket(t, with("get", "-name", "jobs/report")...); r.code != exitNotFound {
				t.Errorf("get after release: exit %d, want %d", r.code, exitNotFound)
			}
			next := decodeGrant(t, runPicket(t, with("acquire", "-name", "jobs/report", "-ttl", "1m")...))
			if next.Token <= g.Token {
				t.Errorf("grant after release: token %d, want above %d", next.Token, g.Token)
			}
		})
	}
}

func TestRemoteNeedsAuthToken(t *testing.T) {
	dir := t.TempDir()
	secret := dir + "/token"
	writeFile(t, secret, "  s3cret\n")
	srv := startServer(t, dir+"/picket.db", "-require-token-file", secret)
	if r := runPicket(t, "ls", "-server", srv.url); r.code != exitError || !strings.Contains(r.stderr, "unauthorized") ||
		!strings.Contains(r.stderr, "-auth-token-file") || !strings.Contains(r.stderr, "PICKET_AUTH_TOKEN_FILE") {
		t.Errorf("ls without the token: exit %d, stderr %q; want %d, unauthorized, naming -auth-token-file and PICKET_AUTH_TOKEN_FILE", r.code, r.stderr, exitError)
	}
	wrong := dir + "/wrong"
	writeFile(t, wrong, "nope")
	if r := runPicket(t, "ls", "-server", srv.url, "-auth-token-file", wrong); r.code != exitError {
		t.Errorf("ls with a wrong token: exit %d, want %d", r.code, exitError)
	}
	if r := runPicket(t, "ls", "-server", srv.url, "-auth-token-file", secret); r.code != exitOK {
		t.Errorf("ls with the token: exit %d, stderr %q", r.code, r.stderr)
	}
}
