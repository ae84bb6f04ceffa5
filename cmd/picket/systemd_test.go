package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxExposure is the highest "systemd-analyze security" rating that
// docs/picket.service may have (0 is locked down, 10 is fully exposed).
const maxExposure = 2.5

// TestSystemdUnitHardened rates docs/picket.service with systemd-analyze
// security (offline: no running systemd needed) and wants at most
// maxExposure. Its control is the unit as it was before the hardening
// (testdata/unit-unhardened, rated 8.3 EXPOSED), which must fail the
// same check: a check that rates every unit well would pass anything.
func TestSystemdUnitHardened(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit := readFile(t, filepath.Join("..", "..", "docs", "picket.service"))
	for _, tc := range []struct {
		what, unit string
		pass       bool
	}{
		{"docs/picket.service", unit, true},
		{"docs/picket.service with README.md's drop-in for other hosts", unit + readmeDropIn(t), true},
		{"the unit before (testdata/unit-unhardened)", readFile(t, filepath.Join("testdata", "unit-unhardened", "picket.service")), false},
	} {
		got := exposure(t, analyze, tc.what, tc.unit)
		if ok := got <= maxExposure; ok != tc.pass {
			t.Errorf("%s: systemd-analyze security rates it %.1f; want %s %.1f", tc.what, got, map[bool]string{true: "at most", false: "above"}[tc.pass], maxExposure)
		}
	}
}

// readmeDropIn returns the drop-in of README.md's "Serving other hosts"
// (LoadCredential= for the token and certificates).
func readmeDropIn(t *testing.T) string {
	t.Helper()
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	_, rest, ok := strings.Cut(readme, "# /etc/systemd/system/picket.service.d/")
	if !ok {
		t.Fatal("README.md has no drop-in for /etc/systemd/system/picket.service.d/")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(block, "LoadCredential=") {
		t.Fatalf("README.md's drop-in does not end, or reads no credential:\n%s", block)
	}
	_, block, _ = strings.Cut(block, "\n") // past the comment line
	var out strings.Builder
	for _, line := range strings.Split(block, "\n") {
		out.WriteString(strings.TrimPrefix(line, "  ") + "\n")
	}
	return "\n" + out.String()
}

var overallExposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// exposure returns the overall exposure level systemd-analyze gives the unit
// text, written as picket.service in a directory of its own (systemd-analyze
// takes a unit's name from its file name). A line systemd does not take
// (an unknown key, a bad value) fails the test: it would be ignored.
func exposure(t *testing.T, analyze, what, text string) float64 {
	t.Helper()
	unit := filepath.Join(t.TempDir(), "picket.service")
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security --offline=true, %s: %v\n%s", what, err, out)
	}
	if m := regexp.MustCompile(`(?m)^.*picket\.service:\d+: .*$`).Find(out); m != nil {
		t.Errorf("%s: systemd does not take a line: %s", what, m)
	}
	m := overallExposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security, %s: no overall exposure level in:\n%s", what, out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
