package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

const helpText = `picket: leases with fencing tokens, on one SQLite file or a picket server.

Usage:
  picket serve   [-addr 127.0.0.1:7070] [-db picket.db] [-auth-token-file F] [-lock-delay D]
                 [-max-in-flight 1024] [-max-waiting 4096] [-shutdown-timeout 30s]
  picket run     -name N -ttl 30s [-wait 1m] [-grace 10s] [-db F | -server URL] -- CMD [ARGS...]
  picket acquire -name N -ttl 30s [-wait D] [-owner O] [-holder H] [-db F | -server URL]
  picket renew   -name N -holder H -token T [-ttl D] [-db F | -server URL]
  picket release -name N -holder H -token T [-db F | -server URL]
  picket ls      [-prefix P] [-json] [-db F | -server URL]
  picket get     -name N [-db F | -server URL]
  picket bench   [-db F | -server URL] [-c 1,4,16,64,256] [-d 5s] [-names distinct|hot|both] [-json] [-chart FILE.svg]
  picket backup  [-db picket.db] OUT
  picket restore -token-floor N BACKUP DB
  picket help

Commands:
%s
Store (every command but serve):
  -db FILE              embedded mode: open the SQLite file directly (default picket.db)
  -server URL           remote mode: talk to a picket server (e.g. http://127.0.0.1:7070)
  -auth-token-file F    remote mode: send the bearer token read from F (surrounding whitespace trimmed)

picket run holds the lease while CMD runs: it waits up to -wait for the name,
runs CMD with PICKET_LEASE (the name) and PICKET_TOKEN (the fencing token) in
its environment, renews the lease at about a third of its TTL, and if the lease
is lost sends CMD SIGTERM, then SIGKILL after -grace. SIGINT and SIGTERM sent to
picket are passed on to CMD. Write with PICKET_TOKEN to a fenced resource: that,
not the lease, is what keeps a paused CMD from overwriting its successor.

Exit status:
  0    success (run: CMD exited 0)
  1    error: the store is unavailable, I/O or network failure
  2    usage: bad flags or arguments; nothing was done
  3    not acquired: the name is held by someone else (after -wait, if given)
  4    lease lost: renew or release rejected, or (run) the lease was lost while CMD ran
  5    not found: get found no live lease under that name
  130  interrupted before the lease was acquired
  run: otherwise CMD's own exit status, or 128+N if CMD was killed by signal N
`

func printHelp(w io.Writer) {
	var list string
	for _, c := range commands() {
		list += fmt.Sprintf("  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, helpText, list)
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
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitError
}
