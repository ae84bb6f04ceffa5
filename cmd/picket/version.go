package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints what this binary is: the module version, the VCS
// revision it was built from (with "+dirty" for uncommitted changes) and the
// Go version, from the build information Go stamps into every binary.
func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	printVersion(e.stdout)
	return nil
}

func printVersion(w io.Writer) {
	fmt.Fprintln(w, versionLine())
}

// versionLine is one line: "picket v1.2.3 (rev 0123abcd+dirty, 2026-12-02T10:00:00Z) go1.26.8".
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "picket (no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, at, dirty := "unknown", "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	if at != "" {
		rev += ", " + at
	}
	return fmt.Sprintf("picket %s (rev %s) %s", version, rev, bi.GoVersion)
}
