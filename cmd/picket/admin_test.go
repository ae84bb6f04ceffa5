package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRevokeAndHistory: "picket revoke" over a server needs the admin token
// (the clients' token is refused, 401), ends the lease, and the holder's
// renew then exits 4 saying "revoked"; "picket history" shows the grant and
// the revoke with its reason and who asked, and never the holder secret.
func TestRevokeAndHistory(t *testing.T) {
	dir := t.TempDir()
	clientTok, adminTok := filepath.Join(dir, "client"), filepath.Join(dir, "admin")
	if err := os.WriteFile(clientTok, []byte("client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(adminTok, []byte("admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, filepath.Join(dir, "picket.db"), "-require-token-file", clientTok, "-admin-token-file", adminTok)
	remote := []string{"-server", srv.url, "-auth-token-file", clientTok}
	r := runPicket(t, append([]string{"acquire", "-name", "job", "-ttl", "1h", "-owner", "cron@a", "-holder", "holder-secret"}, remote...)...)
	if r.code != 0 {
		t.Fatalf("acquire: exit %d: %s", r.code, r.stderr)
	}
	g := decodeGrant(t, r)

	r = runPicket(t, append([]string{"revoke", "job", "-reason", "stuck"}, remote...)...)
	if r.code != exitUsage && r.code != 1 || !strings.Contains(r.stderr, "admin") {
		t.Errorf("revoke without the admin token: exit %d, stderr %q; want a refusal naming the admin token", r.code, r.stderr)
	}
	r = runPicket(t, append([]string{"revoke", "job", "-reason", "stuck", "-by", "ops", "-admin-token-file", clientTok}, remote...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "401") {
		t.Errorf("revoke with the clients' token as admin token: exit %d, stderr %q; want 401", r.code, r.stderr)
	}
	r = runPicket(t, append([]string{"revoke", "job", "-reason", "stuck", "-by", "ops", "-admin-token-file", adminTok}, remote...)...)
	if r.code != 0 {
		t.Fatalf("revoke: exit %d: %s", r.code, r.stderr)
	}
	r = runPicket(t, append([]string{"renew", "-name", "job", "-holder", "holder-secret", "-token", strconv.FormatUint(g.Token, 10)}, remote...)...)
	if r.code != exitLost || !strings.Contains(r.stderr, "revoked") || !strings.Contains(r.stderr, "stuck") {
		t.Errorf("renew after revoke: exit %d, stderr %q; want exit %d naming the revoke and its reason", r.code, r.stderr, exitLost)
	}

	r = runPicket(t, append([]string{"history", "-name", "job", "-json"}, remote...)...)
	if r.code != 0 {
		t.Fatalf("history: exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "holder-secret") {
		t.Errorf("history shows the holder secret:\n%s", r.stdout)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct{ Kind, Reason, By, Owner string } // the fields of GET /v1/history's events
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("history -json line %q: %v", line, err)
		}
		kinds = append(kinds, e.Kind)
		if e.Kind == "revoke" && (e.Reason != "stuck" || e.By != "ops" || e.Owner != "cron@a") {
			t.Errorf("revoke event = %+v, want reason stuck, by ops, owner cron@a", e)
		}
	}
	if got := strings.Join(kinds, ","); got != "grant,revoke" {
		t.Errorf("history kinds = %s, want grant,revoke", got)
	}
	r = runPicket(t, append([]string{"history"}, remote...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "revoke") || !strings.Contains(r.stdout, "stuck (by ops)") {
		t.Errorf("history table: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRevokeUsage: bad revoke and history invocations are usage errors
// that change nothing.
func TestRevokeUsage(t *testing.T) {
	db := tempDB(t)
	same := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(same, []byte("one-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no name", []string{"revoke", "-db", db}},
		{"two names", []string{"revoke", "-db", db, "a", "b"}},
		{"admin token without server", []string{"revoke", "-db", db, "-admin-token-file", "x", "a"}},
		{"bad token", []string{"revoke", "-db", db, "-token", "zero", "a"}},
		{"bad since", []string{"history", "-db", db, "-since", "yesterday"}},
		{"negative limit", []string{"history", "-db", db, "-limit", "-1"}},
		{"same admin and client token", []string{"serve", "-addr", "127.0.0.1:0", "-db", db, "-require-token-file", same, "-admin-token-file", same}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runPicket(t, tc.args...)
			if r.code != exitUsage {
				t.Errorf("picket %v: exit %d, want %d (usage); stderr %q", tc.args, r.code, exitUsage, r.stderr)
			}
		})
	}
	// Embedded: revoke needs no token, and the history has it.
	if r := runPicket(t, "acquire", "-db", db, "-name", "a", "-ttl", "1h"); r.code != 0 {
		t.Fatalf("acquire: %s", r.stderr)
	}
	if r := runPicket(t, "revoke", "-db", db, "a", "-reason", "test"); r.code != 0 {
		t.Fatalf("revoke: exit %d: %s", r.code, r.stderr)
	}
	if r := runPicket(t, "revoke", "-db", db, "a"); r.code != exitNotFound {
		t.Errorf("revoke of a revoked lease: exit %d, want %d: %s", r.code, exitNotFound, r.stderr)
	}
	if r := runPicket(t, "history", "-db", db, "-since", "1h", "-limit", "1"); r.code != 0 || !strings.Contains(r.stdout, "test") {
		t.Errorf("history -limit 1: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
