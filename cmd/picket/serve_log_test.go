package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeLogs: picket serve logs refused requests only at -log-level
// debug, in logfmt or (-log-format json) one JSON object a line, and never
// writes a holder that came with a trailing newline (nor any other invalid
// holder) to its log. The control is the debug level itself: there the
// refusals are logged, so their absence at info is the filter's doing, and
// the holder's absence is not for want of a log line.
func TestServeLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds picket: skipped in -short mode")
	}
	const secret = "s3cr3t-h0lder"
	bodies := []string{
		`{"name":"a","ttl_ms":1000,"holder":"` + secret + `\n"}`,
		`{"name":"a","ttl_ms":1000,"holder":"` + secret + `\r\n"}`,
		`{"name":"a","token":1,"holder":"` + secret + `\n"}`,
	}
	for _, tc := range []struct {
		name     string
		args     []string
		refusals bool // logged
		json     bool
	}{
		{"default", nil, false, false},
		{"debug", []string{"-log-level", "debug"}, true, false},
		{"json debug", []string{"-log-format", "json", "-log-level", "debug"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPlainServer(t, tc.args...)
			for i, b := range bodies {
				path := "/v1/acquire"
				if i == 2 {
					path = "/v1/release"
				}
				resp, err := http.Post("http://"+s.addr+path, "application/json", strings.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 400 {
					t.Errorf("%s: %d, want 400", b, resp.StatusCode)
				}
			}
			var logs string
			for range 50 { // the log reaches the pipe before the answer; give the reader a moment
				logs = s.logs.String()
				if !tc.refusals || strings.Count(logs, "request refused") >= len(bodies) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := strings.Count(logs, "request refused"); (got >= len(bodies)) != tc.refusals || (!tc.refusals && got != 0) {
				t.Errorf("%d refusals logged, want them logged: %v\n%s", got, tc.refusals, logs)
			}
			if strings.Contains(logs, secret) {
				t.Errorf("the log holds the holder:\n%s", logs)
			}
			if tc.json {
				for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Errorf("a log line is not JSON: %q", line)
					}
				}
			}
		})
	}
	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{{"-log-level", "loud"}, {"-log-format", "xml"}, {"-max-leases", "-1"}, {"-body-timeout", "0s"}} {
			cmd := picket(t, append([]string{"serve", "-addr", "127.0.0.1:0", "-db", t.TempDir() + "/p.db"}, args...)...)
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitUsage {
				t.Errorf("serve %v: exit %d (%v), want %d", args, code, err, exitUsage)
			}
		}
	})
}
