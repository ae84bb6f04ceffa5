package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestServeDebugAddr: -debug-addr serves Go's profiles on a listener of its
// own, never on the API's, and refuses an address that is not loopback
// before it creates the database file. The control is the API listener:
// the same path answers 404 there, so the 200 is the debug listener's.
func TestServeDebugAddr(t *testing.T) {
	if testing.Short() {
		t.Skip("builds picket: skipped in -short mode")
	}
	s := startPlainServer(t, "-debug-addr", "127.0.0.1:0")
	re := regexp.MustCompile(`msg="serving profiles" addr=(http://[^ ]+/debug/pprof/)`)
	var url string
	waitFor(t, 10*time.Second, "the profiles' address in the log", func() bool {
		m := re.FindStringSubmatch(s.logs.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	for _, tc := range []struct {
		url  string
		want int
	}{
		{url + "cmdline", http.StatusOK},
		{url + "goroutine?debug=1", http.StatusOK},
		{"http://" + s.addr + "/debug/pprof/cmdline", http.StatusNotFound},
	} {
		resp, err := http.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.url, resp.StatusCode, tc.want)
		}
	}

	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:6060", ":6060", "example.com:6060", "127.0.0.1"} {
		db := filepath.Join(t.TempDir(), "p.db")
		cmd := picket(t, "serve", "-addr", "127.0.0.1:0", "-db", db, "-debug-addr", addr)
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage {
			t.Errorf("serve -debug-addr %q: exit %d (%v), want %d", addr, code, err, exitUsage)
		}
		if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("serve -debug-addr %q: the database file exists (%v); a refused flag must change nothing", addr, err)
		}
	}
}
