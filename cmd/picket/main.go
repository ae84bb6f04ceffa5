// Command picket serves, holds and inspects picket leases.
//
//	picket serve   [-addr 127.0.0.1:7070] [-db picket.db | -etcd URLS] [-auth-token-file F]
//	picket run     NAME -ttl 30s [-wait 1m] [-db F | -server URL] -- CMD ARGS...
//	picket acquire NAME -ttl 30s [-wait D] [-print FIELDS] [-hold] [-db F | -server URL]
//	picket renew   NAME -holder H -token T [-ttl D] [-db F | -server URL]
//	picket release NAME -holder H -token T [-db F | -server URL]
//	picket ls      [-prefix P] [-json] [-db F | -server URL]
//	picket get     NAME [-db F | -server URL]
//
// NAME may also be given as -name NAME, before or after the other flags.
//
// Run "picket help" for the flags and the exit codes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/picketlock/picket/httpapi"
)

func main() {
	os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError marks errors in the command line; exitCode maps it to
// exitUsage and prints it as one line that says where the flags are
// described: "picket get: -ttl: ...; see 'picket get -h'".
type usageError struct {
	cmd string // the command ("kv get"), if the error knows it; else the one Main ran
	msg string // starts with the command's name, as usagef's callers write it
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitError carries an exit status chosen by a subcommand, such as the
// status of the command that "picket run" ran.
type exitStatus struct {
	code int
	err  error // may be nil: the status alone is the answer
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitStatus) Unwrap() error { return e.err }

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a subcommand may touch of the outside world.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func commands() []command {
	return []command{
		{"serve", "run the HTTP server on an embedded SQLite file or an etcd cluster", runServe},
		{"run", "hold a lease while a command runs (a distributed flock)", runRun},
		{"acquire", "acquire a lease and print the grant as JSON", runAcquire},
		{"renew", "renew a lease and print the grant as JSON", runRenew},
		{"release", "release a lease", runRelease},
		{"ls", "list live leases", runList},
		{"get", "print one live lease as JSON", runGet},
		{"revoke", "end a lease its holder cannot release (an operator's call; over -server, needs the admin token)", runRevoke},
		{"history", "print the grant history: grants, releases, expiries, revokes, fenced refusals", runHistory},
		{"watch", "print a lease's state, then one line per change (grant, renew, release, expiry)", runWatch},
		{"kv", "put, get or delete a value in the fenced key-value store", runKV},
		{"fence", "write, read or remove a whole file fenced by a token, beside it (no store needed)", runFence},
		{"bench", "measure grant throughput", runBench},
		{"health", "say whether the store can grant (exit 0) or not (exit 6)", runHealth},
		{"version", "print the version, VCS revision and Go version", runVersion},
		{"backup", "write a consistent copy of a store, live or not", runBackup},
		{"restore", "make a backup usable, above a token floor", runRestore},
		{"help", "print this help", nil},
	}
}

// Main is the whole program: it returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	if name == "help" || name == "-h" || name == "-help" || name == "--help" {
		printHelp(stdout)
		return exitOK
	}
	if name == "-version" || name == "--version" {
		printVersion(stdout)
		return exitOK
	}
	if name == runGuardCommand {
		return exitCode(stderr, name, runGuard(rest))
	}
	if name == benchProcCommand { // bench_procs.go
		return exitCode(stderr, name, runBenchProc(ctx, e, rest))
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return exitCode(stderr, c.name, c.run(ctx, e, rest))
		}
	}
	fmt.Fprintf(stderr, "picket: unknown command %q; see 'picket help'\n", name)
	return exitUsage
}

// exitCode prints err (if any) and maps it to an exit status; cmd is the
// command that returned it.
func exitCode(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		printUsageError(stderr, cmd, ue)
		return exitUsage
	}
	var st *exitStatus
	if errors.As(err, &st) {
		if st.err != nil {
			fmt.Fprintf(stderr, "picket: %v\n", st.err)
		}
		return st.code
	}
	fmt.Fprintf(stderr, "picket: %v\n", err)
	if errors.Is(err, httpapi.ErrUnauthorized) {
		fmt.Fprintln(stderr, unauthorizedHint(err))
		return exitError
	}
	return codeFor(err)
}

// unauthorizedHint says which credential a 401 asks for: the admin token
// for a revoke (the clients' token never revokes), else either token.
func unauthorizedHint(err error) string {
	if strings.Contains(err.Error(), "admin token") && !strings.Contains(err.Error(), "clients' token or the admin token") {
		return "picket: revoke needs the server's admin token: name the file that holds it with -admin-token-file FILE (or PICKET_ADMIN_TOKEN_FILE); the clients' token is not enough"
	}
	return "picket: the server needs a bearer token: name the file that holds it with -auth-token-file FILE (or PICKET_AUTH_TOKEN_FILE), or the admin token's with -admin-token-file FILE"
}

// printUsageError writes ue as one line: "picket CMD: what was wrong; see
// 'picket CMD -h'".
func printUsageError(w io.Writer, cmd string, ue *usageError) {
	if ue.cmd != "" {
		cmd = ue.cmd
	}
	msg := ue.msg
	if c, _, ok := strings.Cut(msg, ": "); ok && (c == cmd || strings.HasPrefix(c, cmd+" ")) {
		cmd = c // "kv put: ...": the verb too
	} else {
		msg = cmd + ": " + msg
	}
	fmt.Fprintf(w, "picket %s; see 'picket %s -h'\n", strings.ReplaceAll(msg, "\n", "; "), cmd)
}

// printJSON writes v to w as one line of JSON.
func printJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
