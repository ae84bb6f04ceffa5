package main

import (
	"fmt"
	"io"
)

const helpText = `picket: leases with fencing tokens, on one SQLite file, a picket server or an etcd cluster.

Usage:
  picket serve   [-addr 127.0.0.1:7070] [-addr-file F] [-db picket.db | -etcd URLS] [-auth-token-file F] [-lock-delay D]
                 [-admin-token-file F] [-history-max 100000] [-history-age 168h]
                 [-max-in-flight 1024] [-max-waiting 4096] [-shutdown-timeout 30s]
                 [-allow-origin O] [-allow-host H] [-max-leases N] [-max-kv-keys N] [-max-kv-bytes N]
                 [-max-watched N]
                 [-max-lists 2] [-body-timeout 5s] [-body-budget 33554432] [-sweep 1m]
                 [-log-level info] [-log-format logfmt|json] [-debug-addr 127.0.0.1:PORT]
                 [-ui]   (the status page at /ui, behind the same token: on by default, -ui=false turns it off)
                 [-tls-cert F -tls-key F [-tls-client-ca F]]   (HTTPS; the pair reloaded when
                 its files change or on SIGHUP; -tls-client-ca: only clients with a certificate)
  picket run     NAME -ttl 30s [-wait 1m] [-grace 10s] [-conflict-exit-code 3]
                 [-db F | -server URL | -etcd URLS]
                 -- CMD [ARGS...]
  picket acquire NAME -ttl 30s [-wait D] [-owner O] [-holder H] [-print FIELDS] [-hold]
                 [-db F | -server URL | -etcd URLS]
  picket renew   NAME -holder H -token T [-ttl D] [-print FIELDS] [-db F | -server URL | -etcd URLS]
  picket release NAME -holder H -token T [-db F | -server URL | -etcd URLS]
  picket ls      [-prefix P] [-json] [-db F | -server URL | -etcd URLS]
  picket get     NAME [-print FIELDS] [-db F | -server URL | -etcd URLS]
  picket watch   NAME [-json] [-count N] [-db F | -server URL | -etcd URLS]
                 (the state now, then one line per change; exit 0 on SIGINT/SIGTERM)
  picket bench   [-db NEW.db [-force] | -server URL [-ca F] [-cert F -key F] | -etcd URLS] [-c 1,4,16,64,256] [-d 5s] [-names all|distinct,fresh,hot] [-json] [-chart FILE.svg]
                 [-procs 2,5,10,20 [-hold 2ms]]   (many processes on one file against goroutines of one)
                 [-history-cost R]   (R rounds alternating two files, grant history off and on: its cost)
  picket revoke  NAME [-reason R] [-by WHO] [-token T] [-db F | -server URL -admin-token-file F | -etcd URLS]
                 (ends the lease; its holder's next renew says "revoked"; over -server, the server's admin token)
  picket history [NAME] [-since 1h|RFC3339] [-limit N] [-json] [-db F | -server URL | -etcd URLS]
                 (grants, releases, expiries, revokes and fenced refusals, oldest first)
  picket kv      put [-token T] KEY [VALUE] | get [-json] KEY | delete [-token T] KEY   [-db F | -server URL | -etcd URLS]
                 (-token defaults to $PICKET_TOKEN; put reads VALUE from stdin when it is not given)
  picket fence   write [-token T] [-mode 0644] FILE < DATA | read [-json] FILE | remove [-token T] FILE
                 (a whole file replaced under a token, its fence beside it: FILE.fence, FILE.lock; no store)
  picket health  [-timeout 5s] [-db F | -server URL]   (exit 0 "ok", or 6 with the reason; 2 for a -db that does not exist)
  picket version                  (also: picket -version)
  picket backup  [-db picket.db] OUT
  picket restore -token-floor N BACKUP DB
  picket restore -token-floor N -etcd URL,URL... [-etcd-prefix P]    (after an etcd snapshot restore or a new cluster)
  picket help

Every command that acts on one lease takes its NAME as the first argument, the flags before or
after it; -name NAME is a synonym (picket get -name N is picket get N; both naming different
leases is a usage error). picket run -name N -- CMD still runs CMD. A usage error is one line
that ends with where to read the flags: see 'picket CMD -h'.

Commands:
%s
Store (every command but version and restore; serve and backup take -db or -etcd only, bench a new -db):
  -db FILE              embedded mode: open the SQLite file directly (default picket.db)
  -server URL           remote mode: talk to a picket server (e.g. http://127.0.0.1:7070)
  -auth-token-file F    remote mode: send the bearer token read from F (surrounding whitespace trimmed)
  -admin-token-file F   remote mode: the server's admin token, read from F: revoke needs it, and it is
                        enough alone for every other request (no -auth-token-file needed beside it)
  -ca F -cert F -key F  remote mode: HTTPS, trusting the CAs in F instead of the system's; a client
                        certificate and key for a server that asks for one (a bare host:port is https)
  -etcd URL,URL...      cluster mode: an etcd cluster's client URLs
  -etcd-prefix P        cluster mode: keep every key under P (default picket)
  -etcd-ca F -etcd-cert F -etcd-key F    cluster mode: TLS (CA, client certificate and key, PEM files)
  -etcd-user U -etcd-password-file F     cluster mode: log in to etcd as U
  -allow-overlayfs      embedded mode: accept a -db on overlayfs, a container's root, which is
                        refused otherwise: the same file opened through the overlay's upper directory hands
                        out tokens twice, and a container recreated without a volume starts again at 1
                        (for a test suite in a container; a service uses a volume or a bind-mounted directory)

Read commands (get, ls, watch, history, health, kv get) never create a store: a -db that does not
exist is a usage error (exit 2) and leaves no file behind; serve, acquire, run and kv put create it.

serve -addr-file F writes the address it listens on (host:port; -addr :0 picks the port) to F once it
answers, and removes F when it stops. serve -auth-token-file F: the bearer token the server requires,
under the clients' name for it (its old name -require-token-file still works); -admin-token-file F:
the admin token, also under the clients' name. A -server and its client flags exported in the
environment are ignored by serve and backup.

Every flag can also be set in the environment as PICKET_ and its name in capitals,
dashes as underscores (PICKET_SERVER, PICKET_DB, PICKET_AUTH_TOKEN_FILE, ...);
a flag on the command line wins, and a store named on the command line (-db,
-server, -etcd) replaces the one named in the environment: with PICKET_SERVER
exported, "picket ls -db x.db" reads x.db. -server takes a URL or a bare host:port.

acquire, renew and get print the HTTP API's JSON; -print token,holder prints only
those fields, space-separated on one line. acquire -hold keeps the lease, renewing
it, until SIGINT or SIGTERM, then releases it (exit 4 if it is lost first).

picket run holds the lease while CMD runs: it waits up to -wait for the name
(saying on stderr when it starts waiting and when it gets the lease),
runs CMD with PICKET_LEASE (the name) and PICKET_TOKEN (the fencing token) in
its environment, and renews the lease at about a third of its TTL. Two commands
guarded by one name never run at the same time, unless a process is paused
past the TTL:
  - CMD dies with picket run: if picket run is killed, even with SIGKILL, the
    kernel kills CMD (Linux parent-death signal), and a guard process kills
    CMD's process group;
  - when renewals fail, CMD gets SIGTERM early enough that the SIGKILL sent
    -grace later lands before the lease's local deadline; a lease found lost
    kills CMD at once. -grace must leave the first renewal half a renewal
    period to get through: at most 0.4*TTL - min(TTL/20, 1s). The default
    (10s) shrinks to that; a larger explicit -grace is a usage error;
  - signals go to CMD's whole process group.
CMD keeps the terminal, as under flock(1): it can read it, and ^C and ^Z reach
it (picket run stops with it and resumes it on fg). SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGTSTP, SIGUSR1 and SIGUSR2 sent to picket run are passed on to CMD.
Write with PICKET_TOKEN to a fenced resource: that, not the lease, is what
keeps a paused CMD from overwriting its successor.

Exit status:
`

func printHelp(w io.Writer) {
	var list string
	for _, c := range commands() {
		list += fmt.Sprintf("  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, helpText, list)
	printExitStatuses(w)
}
