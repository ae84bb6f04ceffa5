package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// maxExposure is the highest "systemd-analyze security" rating that
// docs/picket.service may have (0 is locked down, 10 is fully exposed).
const maxExposure = 2.5

// TestSystemdUnitHardened rates docs/picket.service with systemd-analyze
// security (offline: no running systemd needed) and wants at most
// maxExposure. Its control is the unit as it was before the hardening
// (testdata/controls/unit-unhardened, rated 8.3 EXPOSED), which must fail the
// same check: a check that rates every unit well would pass anything.
func TestSystemdUnitHardened(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	for _, tc := range []struct {
		path string
		pass bool
	}{
		{filepath.Join("..", "..", "docs", "picket.service"), true},
		{filepath.Join("testdata", "controls", "unit-unhardened", "picket.service"), false},
	} {
		got := exposure(t, analyze, tc.path)
		if ok := got <= maxExposure; ok != tc.pass {
			t.Errorf("%s: systemd-analyze security rates it %.1f; want %s %.1f", tc.path, got, map[bool]string{true: "at most", false: "above"}[tc.pass], maxExposure)
		}
	}
}

var overallExposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// exposure returns the overall exposure level systemd-analyze gives the unit
// file. The file is copied under its own name into a directory of its own:
// systemd-analyze takes a unit's name from its file name.
func exposure(t *testing.T, analyze, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "picket.service")
	if err := os.WriteFile(unit, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security --offline=true %s: %v\n%s", path, err, out)
	}
	m := overallExposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security %s: no overall exposure level in:\n%s", path, out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
