package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// maxKVValue bounds what "picket kv put" reads from stdin: the server takes
// at most 1 MiB, and the embedded store the same.
const maxKVValue = 1 << 20

// runKV is "picket kv put|get|delete": the fenced key-value store from a
// shell script, in every store mode. Under "picket run" the token comes from
// $PICKET_TOKEN by itself (every flag can come from the environment), so a
// guarded script writes with
//
//	picket kv put reports/daily "$(generate-report)"
//
// and a paused, superseded copy of it is refused (exit 4) instead of
// overwriting its successor's result.
func runKV(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("kv: want put, get or delete")
	}
	verb, args := args[0], args[1:]
	if verb == "-h" || verb == "-help" || verb == "--help" || verb == "help" {
		_, err := fmt.Fprint(e.stdout, kvHelp)
		return err
	}
	fs := newFlagSet(e, "kv "+verb)
	sf := storeFlags{existing: verb == "get"} // a read creates no store
	sf.register(fs)
	var tok *string
	if verb == "put" || verb == "delete" {
		tok = fs.String("token", "", "the writer's fencing `token` (default: $PICKET_TOKEN, as picket run sets it)")
	}
	asJSON := false
	if verb == "get" {
		fs.BoolVar(&asJSON, "json", false, `print {"key", "token", "value", "value_base64"} instead of the raw value`)
	}
	switch verb {
	case "put", "get", "delete":
	default:
		return usagef("kv: unknown verb %q: want put, get or delete", verb)
	}
	if err := parse(fs, args, true); err != nil {
		return err
	}
	rest := fs.Args()
	maxArgs := 1
	if verb == "put" {
		maxArgs = 2
	}
	if len(rest) == 0 || len(rest) > maxArgs {
		return usagef("kv %s: want KEY%s, got %d arguments", verb, map[bool]string{true: " [VALUE]"}[verb == "put"], len(rest))
	}
	key := rest[0]
	var t token.Token
	if tok != nil {
		if *tok == "" {
			return usagef("kv %s: -token (or $PICKET_TOKEN) is required", verb)
		}
		var err error
		if t, err = token.Parse(*tok); err != nil {
			return usagef("kv %s: -token: %v", verb, err)
		}
	}
	var value []byte
	if verb == "put" {
		if len(rest) == 2 {
			value = []byte(rest[1])
		} else {
			b, err := io.ReadAll(io.LimitReader(e.stdin, maxKVValue+1))
			if err != nil {
				return fmt.Errorf("kv put: reading the value from stdin: %w", err)
			}
			if len(b) > maxKVValue {
				return usagef("kv put: the value on stdin is longer than %d bytes", maxKVValue)
			}
			value = b
		}
	}
	return sf.with(fs, func(s store) error {
		kv, ok := s.(lease.KV)
		if !ok {
			return fmt.Errorf("kv: this store has no fenced key-value table")
		}
		switch verb {
		case "put":
			if err := kv.PutFenced(ctx, key, value, t); err != nil {
				return err
			}
			return printJSON(e.stdout, kvAnswer{Key: key, Token: t})
		case "delete":
			if err := kv.DeleteFenced(ctx, key, t); err != nil {
				return err
			}
			return printJSON(e.stdout, kvAnswer{Key: key, Token: t, Deleted: true})
		}
		value, t, err := kv.GetFenced(ctx, key)
		if err != nil {
			return err
		}
		if !asJSON {
			_, err := e.stdout.Write(value)
			return err
		}
		a := kvAnswer{Key: key, Token: t, ValueBase64: base64.StdEncoding.EncodeToString(value)}
		if utf8.Valid(value) {
			text := string(value)
			a.Value = &text
		}
		return printJSON(e.stdout, a)
	})
}

// kvHelp is "picket kv -h".
const kvHelp = `Usage:
  picket kv put [-token T] KEY [VALUE]   store VALUE (or stdin, up to 1 MiB) under KEY, fenced by token T
  picket kv get [-json] KEY              print the value under KEY (-json: with its token, as JSON)
  picket kv delete [-token T] KEY        delete the value under KEY, fenced by token T

-token defaults to $PICKET_TOKEN, which picket run sets for its command; a write
with a token lower than one the key has seen is refused (exit 4).
The store flags are those of every command (-db F | -server URL | -etcd URLS):
see picket help, and picket kv VERB -h for every flag.
`

// kvAnswer is what the kv commands print: the HTTP API's answer to a PUT or
// DELETE, and for get -json the value as text (when it is UTF-8) and base64.
type kvAnswer struct {
	Key         string      `json:"key"`
	Token       token.Token `json:"token"`
	Deleted     bool        `json:"deleted,omitempty"`
	Value       *string     `json:"value,omitempty"`
	ValueBase64 string      `json:"value_base64,omitempty"`
}
