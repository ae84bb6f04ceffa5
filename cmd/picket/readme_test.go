package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeCurlSession replays the curl session of README.md against a
// real "picket serve" and compares every answer with the one the README
// shows, except the values that differ from run to run (the holder secret,
// deadlines). A README that drifts from the server fails here.
func TestReadmeCurlSession(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := curlSteps(string(readme))
	if len(steps) < 5 {
		t.Fatalf("found %d curl steps in README.md; the session is missing", len(steps))
	}
	srv := startServer(t, tempDB(t))
	var holder, readmeHolder string
	for _, st := range steps {
		args := splitShell(st.cmd)
		if holder != "" {
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], readmeHolder, holder)
			}
		}
		req := curlRequest(t, args, srv.url)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", st.cmd, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var want, got map[string]any
		if err := json.Unmarshal([]byte(st.out), &want); err != nil {
			t.Fatalf("README output of %s is not JSON: %v", st.cmd, err)
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s answered %q: not JSON", st.cmd, body)
		}
		if h, ok := got["holder"].(string); ok && holder == "" {
			holder, readmeHolder = h, want["holder"].(string)
		}
		for _, volatile := range []string{"holder", "expires_at", "message"} {
			if _, ok := want[volatile]; ok {
				if _, ok := got[volatile]; !ok {
					t.Errorf("%s: answer lacks %q", st.cmd, volatile)
				}
				delete(want, volatile)
				delete(got, volatile)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: answer differs from README.md (-want +got):\n%s", st.cmd, diff)
		}
	}
}

type curlStep struct{ cmd, out string }

// curlSteps finds "$ curl ..." lines in console blocks and the output line
// after each.
func curlSteps(readme string) []curlStep {
	var steps []curlStep
	lines := strings.Split(readme, "\n")
	for i := 0; i+1 < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ curl ")
		if !ok {
			continue
		}
		if j := strings.Index(cmd, "   #"); j >= 0 {
			cmd = cmd[:j]
		}
		steps = append(steps, curlStep{strings.TrimSpace(cmd), lines[i+1]})
	}
	return steps
}

// splitShell splits a command line on spaces, honouring single quotes (all
// the README uses).
func splitShell(s string) []string {
	var args []string
	var cur strings.Builder
	inQuote, inArg := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			inQuote, inArg = !inQuote, true
		case r == ' ' && !inQuote:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// curlRequest turns curl's -s, -X, -d, --data-binary, --json and -H into a request
// to base.
func curlRequest(t *testing.T, args []string, base string) *http.Request {
	t.Helper()
	method, body, url := "GET", "", ""
	header := http.Header{}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-s":
		case "-X":
			i++
			method = args[i]
		case "-d", "--data-binary":
			i++
			body = args[i]
			if method == "GET" {
				method = "POST"
			}
		case "--json": // curl 7.82+: -d with JSON's Content-Type and Accept
			i++
			body = args[i]
			if method == "GET" {
				method = "POST"
			}
			header.Set("Content-Type", "application/json")
			header.Set("Accept", "application/json")
		case "-H":
			i++
			k, v, _ := strings.Cut(args[i], ":")
			header.Set(k, strings.TrimSpace(v))
		default:
			url = strings.Replace(args[i], "localhost:7070", strings.TrimPrefix(base, "http://"), 1)
		}
	}
	req, err := http.NewRequest(method, "http://"+strings.TrimPrefix(url, "http://"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	return req
}
