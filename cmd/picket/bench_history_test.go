package main

import (
	"strings"
	"testing"
)

// TestBenchHistoryCost: "picket bench -history-cost 1" runs each step on
// the two files, history off and on, and prints both throughputs, the CPU
// per grant and the ratios; with -server or -db it is a usage error.
func TestBenchHistoryCost(t *testing.T) {
	r := runPicket(t, "bench", "-history-cost", "1", "-c", "2", "-names", "distinct", "-d", "200ms")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"OFF GRANTS/S", "ON GRANTS/S", "CPU µs/GRANT", "history on / off, all steps: grants/s"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "history off") || !strings.Contains(r.stderr, "history on") {
		t.Errorf("progress does not name both files:\n%s", r.stderr)
	}
	for _, args := range [][]string{
		{"bench", "-history-cost", "1", "-server", "127.0.0.1:1"},
		{"bench", "-history-cost", "1", "-db", tempDB(t)},
		{"bench", "-history-cost", "0x"},
	} {
		if r := runPicket(t, args...); r.code != exitUsage {
			t.Errorf("picket %v: exit %d, want %d:\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}
