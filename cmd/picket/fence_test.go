package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFenceCommand: picket fence write, read and remove on a real file, the
// stale write refused with exit 4 and nothing changed, bad input a usage
// error (exit 2) that writes nothing, a missing file exit 5, and a job
// under picket run writing with the $PICKET_TOKEN it was given.
func TestFenceCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out.txt")
	fence := func(stdin string, args ...string) result {
		t.Helper()
		cmd := picket(t, append([]string{"fence"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	if r := fence("from 7", "write", "-token", "7", file); r.code != exitOK || !strings.Contains(r.stdout, `"token":7`) {
		t.Fatalf("write 7: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := fence("from 6", "write", "-token", "6", file); r.code != exitLost || !strings.Contains(r.stderr, "stale") {
		t.Fatalf("write 6 after 7: exit %d, %q; want 4, stale", r.code, r.stderr)
	}
	if r := fence("", "read", file); r.code != exitOK || r.stdout != "from 7" {
		t.Fatalf("read: exit %d, %q", r.code, r.stdout)
	}
	var got fenceAnswer
	if r := fence("", "read", "-json", file); r.code != exitOK || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Highest != 7 {
		t.Fatalf("read -json: exit %d, %q", r.code, r.stdout)
	}
	if r := fence("", "remove", "-token", "8", file); r.code != exitOK {
		t.Fatalf("remove 8: exit %d, %q", r.code, r.stderr)
	}
	if r := fence("", "read", file); r.code != exitNotFound {
		t.Fatalf("read after remove: exit %d; want 5", r.code)
	}
	if r := fence("late", "write", "-token", "7", file); r.code != exitLost {
		t.Fatalf("write 7 after remove 8: exit %d; want 4: remove keeps the fence", r.code)
	}

	// Under picket run the job finds its token in $PICKET_TOKEN.
	db := filepath.Join(dir, "picket.db")
	job := filepath.Join(dir, "job.txt")
	script := `echo "from the job" | "$0" fence write "$1"`
	if r := runPicket(t, "run", "-db", db, "-name", "job", "-ttl", "1m", "--", "sh", "-c", script, os.Args[0], job); r.code != exitOK {
		t.Fatalf("picket run -- picket fence write: exit %d: %s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(job); err != nil || string(b) != "from the job\n" {
		t.Fatalf("the job's file: %q, %v", b, err)
	}

	// Bad input: exit 2, nothing written.
	before, _ := os.ReadDir(dir)
	for _, args := range [][]string{
		{"write", filepath.Join(dir, "new")},                // no token
		{"write", "-token", "0", filepath.Join(dir, "new")}, // zero
		{"write", "-token", "x", filepath.Join(dir, "new")}, // not a token
		{"write", "-token", "3", "-mode", "9", filepath.Join(dir, "new")},
		{"write", "-token", "3", dir},                           // a directory
		{"write", "-token", "3", filepath.Join(dir, "a.fence")}, // the fence's own name
		{"write", "-token", "3"},                                // no file
		{"frob", file},
		{},
	} {
		if r := fence("data", args...); r.code != exitUsage {
			t.Errorf("fence %q: exit %d (%s); want 2", args, r.code, r.stderr)
		}
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("bad input left files: %d entries before, %d after", len(before), len(after))
	}
}
