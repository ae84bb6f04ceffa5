package httpapi

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestErrorCodesDocumented: docs/http-api.md has a row for every code of the
// table that server and client share, with the same status, and no row for
// a code the table lacks.
func TestErrorCodesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]string{} // code -> status, from "| `code` | status |" rows
	for line := range strings.SplitSeq(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		code := strings.Trim(strings.TrimSpace(cells[1]), "`")
		status := strings.TrimSpace(cells[2])
		if len(status) == 3 && status[0] >= '1' && status[0] <= '5' {
			doc[code] = status
		}
	}
	seen := map[string]bool{}
	for _, c := range errorCodes {
		if seen[c.code] {
			continue
		}
		seen[c.code] = true
		if got, want := doc[c.code], fmt.Sprint(c.status); got != want {
			t.Errorf("docs/http-api.md: code %s has status %q, want a row with %s", c.code, got, want)
		}
	}
	for code := range doc {
		if !seen[code] {
			t.Errorf("docs/http-api.md: a row for code %s, which the table does not have", code)
		}
	}
}
