#!/usr/bin/env bash
# picket side by side with Redis, etcd and PostgreSQL: one command.
#
#   benchmarks/peers/run.sh [-quick] [-out DIR] [other flags of cmd/peers]
#
# It installs what is missing (Debian: redis-server, postgresql, etcd-server;
# needs root for that), builds picket and the runner, starts every server on
# 127.0.0.1 with its data in a new directory under $PEERS_TMP (default
# /var/tmp, on disk: not a tmpfs, where fsync would cost nothing), runs the
# suite with progress on stderr, and writes peers.md (the table), peers.svg
# (the chart) and peers.json into DIR (default ./peers-out). Each server is
# stopped by its own pid when the script exits, however it exits, and the
# directory is removed (PEERS_KEEP=1 keeps it, with the servers' logs).
#
# -rounds N runs the suite N times, the targets forwards, then backwards, and
# reports each step's median round with the lowest and highest rate: ratios
# of two targets (picket on etcd against etcd's Mutex, embedded against
# Redis) then see the machine's slow minutes alike. A 3 s step moves by
# ±20 % from run to run even on a quiet machine; -rounds 3 takes three times
# as long.
#
# Servers started:
#   Redis          appendonly yes, appendfsync always (the runner switches to
#                  everysec for the rows labelled "not durable")
#   etcd           one member, and a cluster of three members
#   PostgreSQL     fsync on, synchronous_commit on (off per connection for
#                  the rows labelled "not durable"); run as the postgres user
#   picket serve   built from ../../cmd/picket, on a SQLite file
#   peers trivial  the trivial net/http handler (the ceiling of HTTP)
#
# PEERS_TAGS is passed to go build -tags (none are needed today). PEERS_ETCD
# names the etcd server binary (default: etcd on the PATH, Debian's 3.4 on
# Debian 12), e.g. the etcd that storage/etcd is tested against:
#
#   . .ci/etcd && PEERS_ETCD=$PICKET_ETCD_BIN benchmarks/peers/run.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
log() { echo "== peers: $*" >&2; }

# --- what is missing gets installed -------------------------------------
pg_bin() {
	local d
	for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
		if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
	done
	return 1
}
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
etcd_bin=${PEERS_ETCD:-etcd}
if ! command -v "$etcd_bin" >/dev/null; then
	if [ -n "${PEERS_ETCD:-}" ]; then log "PEERS_ETCD=$PEERS_ETCD: no such program"; exit 1; fi
	missing+=(etcd-server)
fi
pg_bin >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		log "missing ${missing[*]}: run as root (or install them) first"; exit 1
	fi
	log "installing ${missing[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi
PG=$(pg_bin)

# --- a directory for everything, and the trap that cleans up ------------
work=$(mktemp -d "${PEERS_TMP:-/var/tmp}/picket-peers.XXXXXX")
chmod 0755 "$work"
pids=()    # name:pid of every server started, stopped in reverse order
stop_all() {
	local i entry name pid n
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		entry=${pids[i]}; name=${entry%%:*}; pid=${entry##*:}
		kill -0 "$pid" 2>/dev/null || continue
		# PostgreSQL's fast shutdown is SIGINT; everything else stops on TERM.
		if [ "$name" = postgres ]; then kill -INT "$pid" 2>/dev/null || true; else kill -TERM "$pid" 2>/dev/null || true; fi
		for n in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			log "$name (pid $pid) still running after 10 s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	if [ "${PEERS_KEEP:-}" = 1 ]; then
		log "kept $work"
	else
		rm -rf "$work"
	fi
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- build ---------------------------------------------------------------
log "building picket and the runner in $work/bin"
go -C "$root/cmd/picket" build -o "$work/bin/picket" .
(cd "$here" && go build ${PEERS_TAGS:+-tags "$PEERS_TAGS"} -o "$work/bin/peers" ./cmd/peers)
peers=$work/bin/peers

mapfile -t port < <("$peers" freeport 12)

# wait_port NAME PORT PID: until something listens on 127.0.0.1:PORT, or
# fail if PID died or 60 s passed.
wait_port() {
	local name=$1 p=$2 pid=$3 n
	for n in $(seq 1 600); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then log "$name (pid $pid) died; its log:"; tail -n 20 "$work/$name.log" >&2 || true; exit 1; fi
		sleep 0.1
	done
	log "$name: nothing on 127.0.0.1:$p after 60 s"; exit 1
}

# wait_etcd NAME PORT PID: until the member reports itself healthy (a leader
# elected).
wait_etcd() {
	local name=$1 p=$2 pid=$3 n answer
	wait_port "$name" "$p" "$pid"
	for n in $(seq 1 600); do
		answer=$( (exec 3<>"/dev/tcp/127.0.0.1/$p" && printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && cat <&3) 2>/dev/null || true)
		case $answer in *'"health":"true"'*) return 0 ;; esac
		sleep 0.1
	done
	log "$name: not healthy after 60 s"; exit 1
}

# --- Redis ---------------------------------------------------------------
mkdir -p "$work/redis"
redis-server --bind 127.0.0.1 --port "${port[0]}" --dir "$work/redis" --appendonly yes --appendfsync always \
	--save '' --daemonize no --protected-mode yes >"$work/redis.log" 2>&1 &
redis_pid=$!
pids+=("redis:$redis_pid")
wait_port redis "${port[0]}" "$redis_pid"
log "Redis $(redis-server --version | grep -o 'v=[^ ]*') pid $redis_pid on 127.0.0.1:${port[0]}"

# --- etcd: one member, then three ----------------------------------------
# etcd_member NAME CLIENT_PORT PEER_PORT CLUSTER TOKEN
etcd_member() {
	"$etcd_bin" --name "$1" --data-dir "$work/$1" \
		--listen-client-urls "http://127.0.0.1:$2" --advertise-client-urls "http://127.0.0.1:$2" \
		--listen-peer-urls "http://127.0.0.1:$3" --initial-advertise-peer-urls "http://127.0.0.1:$3" \
		--initial-cluster "$4" --initial-cluster-token "$5" --initial-cluster-state new \
		--logger zap --log-outputs stderr >"$work/$1.log" 2>&1 &
	pids+=("$1:$!")
}
etcd_member etcd1 "${port[1]}" "${port[2]}" "etcd1=http://127.0.0.1:${port[2]}" peers-1
etcd1_pid=${pids[-1]##*:}
cluster3="etcd3a=http://127.0.0.1:${port[4]},etcd3b=http://127.0.0.1:${port[6]},etcd3c=http://127.0.0.1:${port[8]}"
etcd_member etcd3a "${port[3]}" "${port[4]}" "$cluster3" peers-3
etcd_member etcd3b "${port[5]}" "${port[6]}" "$cluster3" peers-3
etcd_member etcd3c "${port[7]}" "${port[8]}" "$cluster3" peers-3
for entry in "${pids[@]}"; do
	name=${entry%%:*}
	case $name in
	etcd1) wait_etcd etcd1 "${port[1]}" "${entry##*:}" ;;
	etcd3a) wait_etcd etcd3a "${port[3]}" "${entry##*:}" ;;
	etcd3b) wait_etcd etcd3b "${port[5]}" "${entry##*:}" ;;
	etcd3c) wait_etcd etcd3c "${port[7]}" "${entry##*:}" ;;
	esac
done
etcd1_url="http://127.0.0.1:${port[1]}"
etcd3_urls="http://127.0.0.1:${port[3]},http://127.0.0.1:${port[5]},http://127.0.0.1:${port[7]}"
log "$("$etcd_bin" --version | head -n1); one member on $etcd1_url, three on $etcd3_urls"

# --- PostgreSQL (refuses to run as root: the postgres user runs it) ------
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$work/pg"
if [ "$(id -u)" = 0 ]; then chown postgres: "$work/pg"; fi
as_pg "$PG/initdb" -D "$work/pg/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$work/postgres.log" 2>&1
as_pg "$PG/pg_ctl" -D "$work/pg/data" -w -t 60 -l "$work/pg/server.log" \
	-o "-c listen_addresses=127.0.0.1 -p ${port[9]} -k $work/pg -c max_connections=200 -c fsync=on -c synchronous_commit=on" \
	start >>"$work/postgres.log" 2>&1 || { tail -n 20 "$work/pg/server.log" >&2; exit 1; }
pids+=("postgres:$(head -n1 "$work/pg/data/postmaster.pid")")
pg_dsn="postgres://postgres@127.0.0.1:${port[9]}/postgres?sslmode=disable"
log "$("$PG/postgres" --version) pid ${pids[-1]##*:} on 127.0.0.1:${port[9]}"

# --- picket serve, and the trivial handler, each a process of its own ----
mkdir -p "$work/picket" "$work/embedded"
"$work/bin/picket" serve -addr "127.0.0.1:${port[10]}" -db "$work/picket/picket.db" >"$work/picket.log" 2>&1 &
picket_pid=$!
pids+=("picket:$picket_pid")
wait_port picket "${port[10]}" "$picket_pid"
"$peers" trivial -addr "127.0.0.1:${port[11]}" >"$work/trivial.log" 2>&1 &
trivial_pid=$!
pids+=("trivial:$trivial_pid")
wait_port trivial "${port[11]}" "$trivial_pid"
log "picket serve pid $picket_pid on 127.0.0.1:${port[10]}, trivial handler pid $trivial_pid on 127.0.0.1:${port[11]}"

# --- the suite -------------------------------------------------------------
"$peers" -command "benchmarks/peers/run.sh${*:+ $*}" -out peers-out -data "$work/embedded" \
	-redis "127.0.0.1:${port[0]}" \
	-etcd1 "$etcd1_url" -etcd3 "$etcd3_urls" \
	-postgres "$pg_dsn" \
	-picket-server "http://127.0.0.1:${port[10]}" -picket-pid "$picket_pid" \
	-trivial "http://127.0.0.1:${port[11]}" -trivial-pid "$trivial_pid" \
	-etcd1-pid "$etcd1_pid" -redis-pid "$redis_pid" \
	"$@"
