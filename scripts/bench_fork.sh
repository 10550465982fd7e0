#!/usr/bin/env bash
# Fork benchmarks (issue #31), in one run on this machine, with a parent
# holding 1,000 files / 10 MB written in the cell:
#   fork to 1 (p50 of ROUNDS), fork to 8, the parent's frozen time (p50),
#   rollback (p50), and the naive way for the same N: create + copy the
#   tree in (sandcell create, sandcell cp), 1 and 8 cells.
# Each printed with its goal from the issue.
# usage: scripts/bench_fork.sh [ROUNDS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
[ -x build/sandcell ] || scripts/setup.sh
sc=$PWD/build/sandcell
# the state root on tmpfs, as the default one is (/run/sandcell,
# $XDG_RUNTIME_DIR/sandcell): the snapshot layer is written there
work=$(mktemp -d /dev/shm/sandcell-bench-fork.XXXXXX)
chmod 755 "$work"
export SANDCELL_ROOT="$work/root"
p="bfp$$"
trap '"$sc" rm -f "$p" >/dev/null 2>&1 || true; "$sc" gc >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

now_ms() { date +%s%N | awk '{ printf "%.3f", $1 / 1e6 }'; }
p50() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rm_all() { "$sc" rm -f "$@" >/dev/null; }

# the tree: 1,000 files, 10 MB in all, on the host (for the naive way)
mkdir -p "$work/tree"
for d in $(seq 0 9); do
	mkdir -p "$work/tree/d$d"
	for f in $(seq 0 99); do
		head -c 10485 /dev/urandom >"$work/tree/d$d/f$f"
	done
done
"$sc" create "$p" >/dev/null
"$sc" cp "$work/tree" "$p:/testbed/tree"
n=$("$sc" exec "$p" -- sh -c 'find /testbed/tree -type f | wc -l')
echo "parent: $n files, $("$sc" exec "$p" -- du -sm /testbed/tree | cut -f1) MB in /testbed/tree"

# fork to 1: wall time of the whole command, and the frozen time it reports
: >"$work/f1" && : >"$work/frozen"
for i in $(seq "$rounds"); do
	t0=$(now_ms)
	out=$("$sc" fork --json "$p" "bfc$i$$")
	t1=$(now_ms)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$work/f1"
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])["frozen_ms"])' "$out" >>"$work/frozen"
	rm_all "bfc$i$$"
done
f1=$(p50 <"$work/f1")
frozen=$(p50 <"$work/frozen")

# fork to 8
names=$(for k in $(seq 8); do echo "bf8c$k$$"; done)
t0=$(now_ms)
"$sc" fork "$p" $names >/dev/null
t1=$(now_ms)
f8=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
rm_all $names

# the naive way: create + copy the tree in, 1 (p50) and 8
: >"$work/n1"
for i in $(seq "$rounds"); do
	t0=$(now_ms)
	"$sc" create "bfn$i$$" >/dev/null && "$sc" cp "$work/tree" "bfn$i$$:/testbed/tree"
	t1=$(now_ms)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$work/n1"
	rm_all "bfn$i$$"
done
n1=$(p50 <"$work/n1")
t0=$(now_ms)
for k in $(seq 8); do
	"$sc" create "bfn8$k$$" >/dev/null && "$sc" cp "$work/tree" "bfn8$k$$:/testbed/tree"
done
t1=$(now_ms)
n8=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
rm_all $(for k in $(seq 8); do echo "bfn8$k$$"; done)

# rollback: a checkpoint, a change, then back (p50)
"$sc" checkpoint "$p" base >/dev/null
: >"$work/rb"
for i in $(seq "$rounds"); do
	"$sc" exec "$p" -- sh -c 'echo x >/testbed/tree/d0/f0'
	t0=$(now_ms)
	"$sc" rollback "$p" base
	t1=$(now_ms)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$work/rb"
done
rb=$(p50 <"$work/rb")

# a child's memory beyond an empty cell: what its tmpfs holds right after
# the fork against an empty cell's (the shared layer is on the host, once)
"$sc" fork "$p" "bfm$$" >/dev/null
"$sc" create "bfe$$" >/dev/null
child_kb=$("$sc" exec "bfm$$" -- sh -c 'df -k /testbed | awk "NR==2 { print \$3 }"')
empty_kb=$("$sc" exec "bfe$$" -- sh -c 'df -k /testbed | awk "NR==2 { print \$3 }"')
rm_all "bfm$$" "bfe$$"

printf '%-44s %10s  %s\n' "measure" "ms" "goal"
printf '%-44s %10.1f  %s\n' "fork to 1, p50 of $rounds (wall, CLI)" "$f1" "<= 40 ms"
printf '%-44s %10.1f  %s\n' "parent frozen, p50 of $rounds" "$frozen" "<= 10 ms"
printf '%-44s %10.1f  %s\n' "fork to 8 (wall, CLI)" "$f8" "<= 0.3x naive 8"
printf '%-44s %10.1f  %s\n' "naive: create + cp tree in, p50 of $rounds" "$n1" "-"
printf '%-44s %10.1f  %s\n' "naive: 8 x (create + cp tree in)" "$n8" "-"
printf '%-44s %10.2f  %s\n' "ratio fork-to-8 / naive-8" "$(awk -v a="$f8" -v b="$n8" 'BEGIN { print a / b }')" "<= 0.30"
printf '%-44s %10.1f  %s\n' "rollback, p50 of $rounds (wall, CLI)" "$rb" "<= 20 ms"
printf '%-44s %10s  %s\n' "child's writable layer use vs empty (KiB)" "$child_kb/$empty_kb" "<= 1024 KiB more"
