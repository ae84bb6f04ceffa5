package lease_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDo: the README's Manager.Do snippet is the code of
// ExampleManager_Do, which runs, line for line (indentation aside).
func TestReadmeDo(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_do_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(example), "// --- README do begins ---\n")
	code, _, ok2 := strings.Cut(code, "// --- README do ends ---")
	if !ok || !ok2 {
		t.Fatal("example_do_test.go: the README do markers are missing")
	}
	var snippet string
	for block := range strings.SplitSeq(string(readme), "```go\n") {
		if strings.Contains(block, "m.Do(ctx,") {
			snippet, _, _ = strings.Cut(block, "```")
			break
		}
	}
	if got, want := lines(snippet), lines(code); !strings.Contains(got, want) {
		t.Errorf("README.md's Do snippet is not ExampleManager_Do's code.\nREADME:\n%s\nexample:\n%s", got, want)
	}
}
