package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Exit statuses. Scripts rely on them, so they never change meaning;
// exitStatuses below documents each for "picket help", and a test checks
// that README.md lists the same ones.
const (
	exitOK              = 0   // success
	exitError           = 1   // any other failure: I/O, a refused credential, an unexpected answer
	exitUsage           = 2   // bad flags or arguments; nothing was done
	exitHeld            = 3   // not acquired: the name is held by someone else (after -wait, if given)
	exitLost            = 4   // the lease is lost: renew/release rejected, or lost while "run" ran the command
	exitNotFound        = 5   // get: no live lease under that name
	exitUnavailable     = 6   // the store could not be reached or refused to answer; nothing is known of the name
	exitNotExecutable   = 126 // run: the command was found but could not be executed
	exitCommandNotFound = 127 // run: the command was not found
	exitInterrupted     = 130 // interrupted (SIGINT, SIGTERM) before the lease was acquired
)

// exitStatusDoc documents one exit status.
type exitStatusDoc struct {
	code    string // a number, or "128+N"
	meaning string
}

// exitStatuses is the one table of exit statuses: "picket help" prints it
// and the tests check README.md against it.
var exitStatuses = []exitStatusDoc{
	{strconv.Itoa(exitOK), "success (run: the command exited 0)"},
	{strconv.Itoa(exitError), "error: I/O, a refused credential, anything else (the message says)"},
	{strconv.Itoa(exitUsage), "usage: bad flags or arguments (a read command's -db that does not exist too); nothing was done"},
	{strconv.Itoa(exitHeld), "not acquired: the name is held by someone else, after -wait if given (run: -conflict-exit-code N changes it)"},
	{strconv.Itoa(exitLost), "lease lost: renew or release rejected, or (run) the lease could not be kept while the command ran"},
	{strconv.Itoa(exitNotFound), "not found: get found no live lease under that name (kv get: no value; fence read: no such file)"},
	{strconv.Itoa(exitUnavailable), "unavailable: the store could not be reached or refused to grant (never reported as held)"},
	{strconv.Itoa(exitNotExecutable), "run: the command was found but cannot be executed"},
	{strconv.Itoa(exitCommandNotFound), "run: the command was not found"},
	{strconv.Itoa(exitInterrupted), "interrupted before the lease was acquired"},
	{"128+N", "run: the command was killed by signal N; otherwise run exits with the command's own status"},
}

// printExitStatuses writes the table as "picket help" shows it.
func printExitStatuses(w io.Writer) {
	for _, s := range exitStatuses {
		fmt.Fprintf(w, "  %-5s %s\n", s.code, s.meaning)
	}
}

// codeFor maps an error from a store or a lease to an exit status.
func codeFor(err error) int {
	switch {
	case errors.Is(err, lease.ErrInvalid):
		return exitUsage
	case errors.Is(err, lease.ErrHeld):
		return exitHeld
	case errors.Is(err, lease.ErrLost), errors.Is(err, token.ErrStale):
		return exitLost
	case errors.Is(err, lease.ErrNotFound):
		return exitNotFound
	case errors.Is(err, lease.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitError
}
