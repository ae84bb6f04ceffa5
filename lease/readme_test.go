package lease_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickStart: the README's library snippet is the code of
// Example_quickStart, which runs, line for line (indentation aside).
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_quickstart_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(example), "// --- README quick-start begins ---\n")
	code, _, ok2 := strings.Cut(code, "// --- README quick-start ends ---")
	if !ok || !ok2 {
		t.Fatal("example_quickstart_test.go: the README quick-start markers are missing")
	}
	_, lib, ok := strings.Cut(string(readme), "\n## The library\n")
	if !ok {
		t.Fatal(`README.md: no "## The library" section`)
	}
	var snippet string
	for block := range strings.SplitSeq(lib, "```go\n") {
		if strings.Contains(block, "lease.NewManager(store)") {
			snippet, _, _ = strings.Cut(block, "```")
			break
		}
	}
	if got, want := lines(snippet), lines(code); !strings.Contains(got, want) {
		t.Errorf("README.md's library snippet is not Example_quickStart's code.\nREADME:\n%s\nexample:\n%s", got, want)
	}
}

// lines trims every line and drops the blank ones.
func lines(s string) string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestReadmeElection: the README's election snippet is the code of
// ExampleElection_Run, which runs, line for line (indentation aside).
func TestReadmeElection(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_election_run_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(example), "// --- README election begins ---\n")
	code, _, ok2 := strings.Cut(code, "// --- README election ends ---")
	if !ok || !ok2 {
		t.Fatal("example_election_run_test.go: the README election markers are missing")
	}
	var snippet string
	for block := range strings.SplitSeq(string(readme), "```go\n") {
		if strings.Contains(block, "lease.NewElection(m, \"billing/leader\"") {
			snippet, _, _ = strings.Cut(block, "```")
			break
		}
	}
	if got, want := lines(snippet), lines(code); !strings.Contains(got, want) {
		t.Errorf("README.md's election snippet is not ExampleElection_Run's code.\nREADME:\n%s\nexample:\n%s", got, want)
	}
}
