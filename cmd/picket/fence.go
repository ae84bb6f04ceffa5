package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/picketlock/picket/token"
)

// maxFenceFile bounds what "picket fence write" reads from stdin: the file
// is replaced whole, from memory.
const maxFenceFile = 256 << 20

// runFence is "picket fence write|read|remove": a file replaced whole under
// a fencing token (token.WriteFile), from a shell script. Under "picket
// run" the token comes from $PICKET_TOKEN, so a guarded job writes its
// output with
//
//	generate-report | picket fence write /srv/reports/daily.json
//
// and a paused, superseded copy is refused (exit 4) instead of replacing
// its successor's file. No store is needed: the fence lives beside the file.
func runFence(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("fence: want write, read or remove (picket fence -h)")
	}
	verb, args := args[0], args[1:]
	if verb == "-h" || verb == "-help" || verb == "--help" || verb == "help" {
		_, err := fmt.Fprint(e.stdout, fenceHelp)
		return err
	}
	switch verb {
	case "write", "read", "remove":
	default:
		return usagef("fence: unknown verb %q: want write, read or remove (picket fence -h)", verb)
	}
	flags := newFlagSet(e, "fence "+verb)
	var tok *string
	if verb != "read" {
		tok = flags.String("token", "", "the writer's fencing `token` (default: $PICKET_TOKEN, as picket run sets it)")
	}
	mode, asJSON := new(string), new(bool)
	*mode = "0644"
	switch verb {
	case "write":
		flags.StringVar(mode, "mode", "0644", "a new file's permission `bits`, in octal (an existing file keeps its own)")
	case "read":
		flags.BoolVar(asJSON, "json", false, `print {"file", "highest", "value_base64"} instead of the raw contents`)
	}
	if err := parse(flags, args, true); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return usagef("fence %s: want one FILE, got %d arguments (picket fence -h)", verb, flags.NArg())
	}
	path := flags.Arg(0)
	var t token.Token
	if tok != nil {
		if *tok == "" {
			return usagef("fence %s: -token (or $PICKET_TOKEN) is required", verb)
		}
		var err error
		if t, err = token.Parse(*tok); err != nil {
			return usagef("fence %s: -token: %v", verb, err)
		}
	}
	perm, err := strconv.ParseUint(*mode, 8, 32)
	if err != nil || perm > 0o777 {
		return usagef("fence %s: -mode %q: want octal permission bits such as 0644", verb, *mode)
	}
	var werr error
	switch verb {
	case "write":
		data, err := io.ReadAll(io.LimitReader(e.stdin, maxFenceFile+1))
		if err != nil {
			return fmt.Errorf("fence write: reading stdin: %w", err)
		}
		if len(data) > maxFenceFile {
			return usagef("fence write: stdin is longer than %d bytes", maxFenceFile)
		}
		if werr = token.WriteFile(ctx, path, t, data, fs.FileMode(perm)); werr == nil {
			return printJSON(e.stdout, fenceAnswer{File: path, Token: t})
		}
	case "remove":
		if werr = token.RemoveFile(ctx, path, t); werr == nil {
			return printJSON(e.stdout, fenceAnswer{File: path, Token: t, Removed: true})
		}
	case "read":
		data, h, err := token.ReadFile(ctx, path)
		if werr = err; werr == nil {
			if !*asJSON {
				_, err := e.stdout.Write(data)
				return err
			}
			return printJSON(e.stdout, fenceAnswer{File: path, Highest: h, ValueBase64: base64.StdEncoding.EncodeToString(data)})
		}
	}
	switch {
	case errors.Is(werr, token.ErrStale): // exit 4, as kv's
	case errors.Is(werr, token.ErrInvalid):
		return usagef("fence %s: %v", verb, werr)
	case errors.Is(werr, fs.ErrNotExist):
		return &exitStatus{code: exitNotFound, err: fmt.Errorf("fence %s: %w", verb, werr)}
	}
	return fmt.Errorf("fence %s: %w", verb, werr)
}

// fenceHelp is "picket fence -h".
const fenceHelp = `Usage:
  picket fence write [-token T] [-mode 0644] FILE < DATA   replace FILE with stdin, fenced by token T
  picket fence read [-json] FILE                           print FILE (-json: with the highest token, as JSON)
  picket fence remove [-token T] FILE                      remove FILE, keeping its fence

-token defaults to $PICKET_TOKEN, which picket run sets for its command; a write
with a token lower than one the file has seen is refused (exit 4) and changes
nothing. Beside FILE live FILE.lock (a lock the kernel drops when its holder
dies) and FILE.fence (the highest token, made durable before the data is
replaced). No store is needed. See go doc github.com/picketlock/picket/token.WriteFile,
which says what holds on NFS.
`

// fenceAnswer is what the fence commands print.
type fenceAnswer struct {
	File        string      `json:"file"`
	Token       token.Token `json:"token,omitempty"`
	Highest     token.Token `json:"highest,omitempty"`
	Removed     bool        `json:"removed,omitempty"`
	ValueBase64 string      `json:"value_base64,omitempty"`
}
