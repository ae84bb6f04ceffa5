package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadFlags: every bad value is refused with an error that names its
// flag, before the run writes anything: no output directory, no CPU
// profile. No server is needed: each run stops at its flags.
func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-rounds", "0"}, "-rounds: 0 is not between 1 and 20"},
		{[]string{"-rounds", "21"}, "-rounds: 21 is not between 1 and 20"},
		{[]string{"-rounds", "-3"}, "-rounds: -3 is not between 1 and 20"},
		{[]string{"-rounds", "three"}, `invalid value "three" for flag -rounds`},
		{[]string{"-c", "0"}, `-c: "0" is not a client count`},
		{[]string{"-c", "16,x"}, `-c: "x" is not a client count`},
		{[]string{"-c", ""}, `-c: "" is not a client count`},
		{[]string{"-names", "distinct,cold"}, `-names: "cold" is not a workload`},
		{[]string{"-d", "0s"}, "-d: 0s is not a positive duration"},
		{[]string{"-d", "-1s"}, "-d: -1s is not a positive duration"},
		{[]string{"-timeout", "0s"}, "-timeout: 0s is not a positive duration"},
		{[]string{"-only", "picket-embeded"}, `-only: "picket-embeded" is none of this run's targets (fsync-floor, picket-embedded)`},
		{[]string{"-only", "picket-embedded,redis-always"}, `-only: "redis-always" is none of this run's targets`},
		{[]string{"-no-embedded"}, "no targets"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-rounds", "2", "extra"}, `unexpected arguments ["extra"]`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out, prof := filepath.Join(dir, "out"), filepath.Join(dir, "cpu.prof")
			args := append([]string{"-out", out, "-cpuprofile", prof, "-data", dir}, c.args...)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
				t.Fatalf("peers %q: %v (stderr %q); want an error saying %q", c.args, err, stderr.String(), c.want)
			}
			for _, f := range []string{out, prof} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("peers %q wrote %s before refusing its flags (%v)", c.args, f, err)
				}
			}
		})
	}
}
