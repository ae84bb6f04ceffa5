package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentials: the one credential story (issue 37), against a real
// "picket serve" child on 127.0.0.1 with real token files. Over a server
// that requires both tokens, the admin token alone (-admin-token-file,
// without -auth-token-file) is enough for revoke and for every other
// request; the clients' token reads and writes but never revokes, and a
// refusal says which credential is missing. serve takes each credential
// under the clients' name for it (-auth-token-file, -admin-token-file), and
// under its old name -require-token-file still requires the token.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	clientTok, adminTok := filepath.Join(dir, "client"), filepath.Join(dir, "admin")
	if err := os.WriteFile(clientTok, []byte("client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(adminTok, []byte("admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongTok := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrongTok, []byte("wrong-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, serveName := range []string{"-auth-token-file", "-require-token-file"} {
		t.Run("serve "+serveName, func(t *testing.T) {
			srv := startServer(t, filepath.Join(t.TempDir(), "picket.db"), serveName, clientTok, "-admin-token-file", adminTok)
			client := []string{"-server", srv.url, "-auth-token-file", clientTok}
			admin := []string{"-server", srv.url, "-admin-token-file", adminTok}
			none := []string{"-server", srv.url}
			for _, c := range []struct {
				what string
				args []string
				code int
				want string // in stdout, or in stderr when code is not 0
			}{
				{"acquire with the clients' token", join([]string{"acquire", "job", "-ttl", "1h"}, client), exitOK, `"name":"job"`},
				{"ls with no token", join([]string{"ls"}, none), exitError, "-auth-token-file FILE"},
				{"ls with no token: the admin token named too", join([]string{"ls"}, none), exitError, "-admin-token-file FILE"},
				{"revoke with the clients' token", join([]string{"revoke", "job"}, client), exitError, "revoke needs the server's admin token: name the file that holds it with -admin-token-file FILE"},
				{"get with the admin token alone", join([]string{"get", "job"}, admin), exitOK, `"name":"job"`},
				{"ls with the admin token alone", join([]string{"ls", "-json"}, admin), exitOK, `"name":"job"`},
				{"history with the admin token alone", join([]string{"history", "job", "-json"}, admin), exitOK, `"kind":"grant"`},
				{"watch with the admin token alone", join([]string{"watch", "job", "-count", "1"}, admin), exitOK, "job"},
				{"revoke with the admin token alone", join([]string{"revoke", "job", "-reason", "stuck"}, admin), exitOK, `"name":"job"`},
				{"get after the revoke", join([]string{"get", "job"}, admin), exitNotFound, "not found"},
				{"acquire with the admin token alone", join([]string{"acquire", "job2", "-ttl", "1h"}, admin), exitOK, `"name":"job2"`},
				{"the admin token as the clients' token", join([]string{"revoke", "job2", "-server", srv.url, "-auth-token-file", adminTok}), exitError, "-admin-token-file"},
				{"both tokens", join([]string{"revoke", "job2"}, client, []string{"-admin-token-file", adminTok}), exitOK, `"name":"job2"`},
				{"get after that revoke", join([]string{"get", "job2"}, client), exitNotFound, "not found"},
				{"a wrong token", join([]string{"ls", "-server", srv.url, "-auth-token-file", wrongTok}), exitError, "401"},
				{"a wrong admin token", join([]string{"ls", "-server", srv.url, "-admin-token-file", wrongTok}), exitError, "401"},
			} {
				r := runPicket(t, c.args...)
				got := r.stdout
				if c.code != exitOK {
					got = r.stderr
				}
				if r.code != c.code || !strings.Contains(got, c.want) {
					t.Errorf("%s: picket %v: exit %d, stdout %q, stderr %q; want %d and %q", c.what, c.args, r.code, r.stdout, r.stderr, c.code, c.want)
				}
			}
		})
	}
}
