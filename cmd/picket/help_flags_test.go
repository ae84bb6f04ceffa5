package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryFlag: "picket help" names every flag of every command,
// as each command's own -h lists them, so that no flag is known only to
// those who read the source.
func TestHelpListsEveryFlag(t *testing.T) {
	help := runPicket(t, "help").stdout
	flagRE := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	for _, c := range commands() {
		if c.run == nil {
			continue
		}
		invocations := [][]string{{c.name, "-h"}}
		if c.name == "kv" {
			invocations = [][]string{{"kv", "put", "-h"}, {"kv", "get", "-h"}, {"kv", "delete", "-h"}}
		}
		if c.name == "fence" {
			invocations = [][]string{{"fence", "write", "-h"}, {"fence", "read", "-h"}, {"fence", "remove", "-h"}}
		}
		for _, args := range invocations {
			r := runPicket(t, args...)
			flags := flagRE.FindAllStringSubmatch(r.stderr, -1)
			if len(flags) == 0 && c.name != "version" {
				t.Errorf("picket %s lists no flags:\n%s", strings.Join(args, " "), r.stderr)
			}
			for _, f := range flags {
				if !strings.Contains(help, "-"+f[1]+" ") && !strings.Contains(help, "-"+f[1]+"]") && !strings.Contains(help, "-"+f[1]+"\n") {
					t.Errorf("picket help does not mention %s's flag -%s", strings.Join(args[:len(args)-1], " "), f[1])
				}
			}
		}
	}
}
