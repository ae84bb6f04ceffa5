package sqlite

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

var checkNames = map[string]check{
	"wal":      checkWAL,
	"readonly": checkReadOnly,
	"mode":     checkMode,
	"owner":    checkOwner,
	"corrupt":  checkCorrupt,
	"inuse":    checkInUse,
	"backup":   checkBackup,
}

// SkipChecks turns the named checks of Open off until the test ends, for
// the controls: "wal" (one database, one WAL), "readonly", "mode",
// "owner", "corrupt", "inuse", "backup". Tests using it must not run in
// parallel.
func SkipChecks(tb testing.TB, names ...string) {
	tb.Helper()
	old := skipped
	for _, n := range names {
		c, ok := checkNames[n]
		if !ok {
			tb.Fatalf("no check %q", n)
		}
		skipped |= c
	}
	tb.Cleanup(func() { skipped = old })
}

// SkipChecksFromEnv turns off the checks named, comma-separated, in
// PICKET_TEST_SKIP: for the controls' child processes.
func SkipChecksFromEnv() error {
	for n := range strings.SplitSeq(os.Getenv("PICKET_TEST_SKIP"), ",") {
		if n == "" {
			continue
		}
		c, ok := checkNames[n]
		if !ok {
			return fmt.Errorf("no check %q", n)
		}
		skipped |= c
	}
	return nil
}
