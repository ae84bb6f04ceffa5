#!/usr/bin/env bash
# compare.sh: the grant path's before/after, measured the only way that holds
# on a shared machine — two builds run in turn, several rounds, one machine.
#
#   benchmarks/compare.sh [options] BASE [HEAD]
#
# BASE and HEAD are commits (anything git rev-parse takes); HEAD defaults to
# the working tree as it is, uncommitted changes included. Each is built once
# (cmd/picket), then `picket bench -json` runs on a fresh SQLite file for each
# binary in turn, ABBA order (base first on odd rounds, head first on even
# ones) so that a machine slowing down or warming up favours neither. For each
# workload and client count it prints both medians and the ratio head/base
# per round: its median and its spread (min–max). benchstat, when it is on
# PATH, gets the same figures as Go benchmark lines.
#
# Options (before BASE):
#   -rounds N     rounds of the pair (default 5)
#   -c LIST       client counts (default 16,64)
#   -d DURATION   each step's length (default 2s)
#   -names LIST   workloads: distinct, fresh, hot (default distinct)
#   -o DIR        keep the builds, raw JSON and benchstat files in DIR
#
# The files live under $TMPDIR (default /tmp): the file system decides the
# fsync cost, so compare on the one users deploy to (a tmpfs warning is
# printed). Not a test: run it by hand for every change to the grant path
# and put its table in the commit message (README, Development).
set -euo pipefail

rounds=5 clients=16,64 dur=2s names=distinct out=""
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	-rounds) rounds=${2:?}; shift 2 ;;
	-c) clients=${2:?}; shift 2 ;;
	-d) dur=${2:?}; shift 2 ;;
	-names) names=${2:?}; shift 2 ;;
	-o) out=${2:?}; shift 2 ;;
	-h | -help | --help) usage ;;
	-*) echo "compare.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case "$rounds" in '' | *[!0-9]* | 0) echo "compare.sh: -rounds $rounds: want a positive count" >&2; exit 2 ;; esac

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
base=$(git -C "$repo" rev-parse --verify "$1^{commit}") || { echo "compare.sh: $1 is not a commit" >&2; exit 2; }
head=""
if [ $# -eq 2 ]; then
	head=$(git -C "$repo" rev-parse --verify "$2^{commit}") || { echo "compare.sh: $2 is not a commit" >&2; exit 2; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/picket-compare-XXXXXX")
cleanup() {
	if [ -z "$out" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
if [ -n "$out" ]; then
	mkdir -p "$out"
	rm -rf "$work"
	work=$(cd "$out" && pwd)
fi
if [ "$(stat -f -c %T "$work")" = tmpfs ]; then
	echo "compare.sh: warning: $work is on tmpfs, where fsync costs nothing; set TMPDIR to a directory on the disk users deploy to" >&2
fi

# build TREE OUT: cmd/picket of one tree. `go build .` inside cmd/picket works
# whether the command is a package of the root module or a module of its own.
build() {
	(cd "$1/cmd/picket" && go build -o "$2" .)
}
# checkout COMMIT DIR: the commit's files, exported (git archive): no
# worktree is registered in the repository, nothing is left behind in it.
checkout() {
	rm -rf "$2"
	mkdir -p "$2"
	git -C "$repo" archive "$1" | tar -x -C "$2"
}

echo "compare.sh: building base ${base:0:12}" >&2
checkout "$base" "$work/base-tree"
build "$work/base-tree" "$work/picket-base"
if [ -n "$head" ]; then
	echo "compare.sh: building head ${head:0:12}" >&2
	checkout "$head" "$work/head-tree"
	build "$work/head-tree" "$work/picket-head"
	headname=${head:0:12}
else
	echo "compare.sh: building head (the working tree)" >&2
	build "$repo" "$work/picket-head"
	headname="working tree"
fi

# One run: a fresh file, the JSON rows tagged with the side and the round.
runone() { # runone SIDE ROUND
	local f="$work/run-$1-$2.db"
	rm -f "$f" "$f-wal" "$f-shm"
	"$work/picket-$1" bench -db "$f" -c "$clients" -d "$dur" -names "$names" -json 2>/dev/null |
		sed "s/^{/{\"side\":\"$1\",\"round\":$2,/" >>"$work/rows.jsonl"
	rm -f "$f" "$f-wal" "$f-shm"
}
: >"$work/rows.jsonl"
start=$SECONDS
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="base head"; else order="head base"; fi
	for side in $order; do
		echo "compare.sh: [$((SECONDS - start))s] round $r/$rounds: $side" >&2
		runone "$side" "$r"
	done
done

# The figures: one line per row as "side round names clients cycles grants p50".
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2" | tr -d '"'; }
: >"$work/flat.txt"
while IFS= read -r line; do
	printf '%s %s %s %s %s %s %s\n' "$(field side "$line")" "$(field round "$line")" "$(field names "$line")" \
		"$(field clients "$line")" "$(field cycles_per_sec "$line")" "$(field grants_per_sec "$line")" \
		"$(field p50_ms "$line")" >>"$work/flat.txt"
done <"$work/rows.jsonl"

# benchstat's input: Go benchmark lines, one file per side, of the workloads
# asked for (an older picket bench -json reports every workload it ran).
for side in base head; do
	awk -v s="$side" -v want=",$names," '$1 == s && index(want, "," $3 ",") { printf "BenchmarkPicketBench/names=%s/clients=%s 1 %s cycles/s %s grants/s %s p50-ms\n", $3, $4, $5, $6, $7 }' \
		"$work/flat.txt" >"$work/$side.bench"
done

echo
echo "base ${base:0:12} vs head $headname: $rounds rounds, ABBA order, -c $clients -d $dur -names $names"
echo
echo "| workload | clients | base cycles/s (median) | head cycles/s (median) | head/base per round: median | min | max |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ k = $3 " " $4; keys[k] = 1; v[$1, k, $2] = $5; rs[$2] = 1 }
END {
	for (k in keys) {
		nb = nh = nr = 0
		for (r in rs) {
			if ((("base", k, r) in v) && (("head", k, r) in v)) {
				b[++nb] = v["base", k, r]; h[++nh] = v["head", k, r]
				if (v["base", k, r] > 0) { q[++nr] = v["head", k, r] / v["base", k, r] }
			}
		}
		if (nr == 0) continue
		split(k, kk, " ")
		lo = hi = q[1]; for (i = 1; i <= nr; i++) { if (q[i] < lo) lo = q[i]; if (q[i] > hi) hi = q[i] }
		printf "| %s | %s | %.0f | %.0f | %.3fx | %.3fx | %.3fx |\n", kk[1], kk[2], median(b, nb), median(h, nh), median(q, nr), lo, hi
		delete b; delete h; delete q
	}
}' "$work/flat.txt" | sort -t'|' -k2,2 -k3,3n

# benchstat from PATH, or the pinned one through the module proxy.
benchstat=(benchstat)
command -v benchstat >/dev/null 2>&1 || benchstat=(go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da)
echo
"${benchstat[@]}" "$work/base.bench" "$work/head.bench" 2>/dev/null || echo "(benchstat unavailable: the table above is the result)"
[ -n "$out" ] && echo && echo "compare.sh: builds, raw rows and benchstat input kept in $out" >&2
exit 0
