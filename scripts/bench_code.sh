#!/usr/bin/env bash
# Code benchmarks (issue #16), each against python3 -c 'print(1)' spawned
# on the host in the same run (alternating, build/tests/alt):
#   1. a warm session's print(1) round trip (`sandcell code session run`:
#      the interpreter is already up in its cell; goal: faster than the
#      host spawn);
#   2. a one-shot `sandcell code run --lang python` of print(1): a fresh
#      cell made, the source written in, python3 started, the cell removed
#      (the goal, <= 1.5x the host spawn, is for pre-warmed cells: 3.);
#   3. the same through `sandcell serve`'s POST /run_code, whose cells come
#      from a pool made ahead (pre-warmed), with a spawned curl as the
#      client (its own start counted too; goal <= 1.5x the host spawn),
#      and from one Python client that keeps its connection open;
#   4. each language's hello world through /run_code against the host
#      compiling and running the same file (ROUNDS/10 each, at least 3;
#      BENCH_LANGS to choose), and a MultiPL-E-shaped sweep: 20 small
#      programs in 10 languages (BENCH_SWEEP_LANGS) at concurrency 16,
#      requests/s against the host doing the same (tests/bench/lang_bench.py).
# The host spawn uses the python3 the cell runs (/usr/bin/python3 when there,
# the host image's, not pyenv's shims).
# usage: scripts/bench_code.sh [ROUNDS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-100}
[ -x build/sandcell ] || scripts/setup.sh
cmake --build build --target alt >/dev/null
alt=build/tests/alt
sc=$PWD/build/sandcell
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
work=$(mktemp -d /tmp/sandcell-bench-code.XXXXXX)
chmod 755 "$work"
export SANDCELL_ROOT="$work/root"
srv=
trap '[ -n "$srv" ] && kill -TERM "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	"$sc" code session rm bench-code >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
med() { awk -v i="$1" '$1 == i { print $2 }' <<<"$2"; }

echo 'print(1)' >"$work/p.py"
"$sc" code session start bench-code >/dev/null
# one run first: the session's first round trip is not a warm one
"$sc" code session run bench-code "$work/p.py" >/dev/null
out=$($alt "$rounds" ::: "$sc" code session run bench-code "$work/p.py" ::: "$py" -c 'print(1)')
s=$(med 1 "$out") h=$(med 2 "$out")
printf 'code session print(1) warm %7.2f ms   host python3 -c %7.2f ms   ratio %s (goal < 1.00)\n' \
	"$s" "$h" "$(ratio "$s" "$h")"
"$sc" code session rm bench-code >/dev/null

out=$($alt "$rounds" ::: "$sc" code run --lang python "$work/p.py" ::: "$py" -c 'print(1)')
s=$(med 1 "$out") h=$(med 2 "$out")
printf 'code run print(1) one-shot %7.2f ms   host python3 -c %7.2f ms   ratio %s (goal <= 1.50)\n' \
	"$s" "$h" "$(ratio "$s" "$h")"

if command -v curl >/dev/null; then
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/token"
	"$sc" serve --listen 127.0.0.1:0 --token-file "$work/token" --port-file "$work/port" \
		--pool 2 >/dev/null 2>"$work/serve.err" &
	srv=$!
	for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
	[ -s "$work/port" ] || { echo "serve: the server did not start"; cat "$work/serve.err"; exit 1; }
	url="http://127.0.0.1:$(cat "$work/port")/run_code"
	printf 'Authorization: Bearer %s\n' "$(cat "$work/token")" >"$work/auth"
	curl -sf -H @"$work/auth" "$url" -d '{"code": "print(1)"}' | grep -q '"stdout":"1\\n"' ||
		{ echo "serve: /run_code did not print 1"; exit 1; }
	out=$($alt "$rounds" ::: curl -sf -o /dev/null -H @"$work/auth" "$url" -d '{"code": "print(1)"}' \
		::: "$py" -c 'print(1)')
	s=$(med 1 "$out") h=$(med 2 "$out")
	printf 'serve /run_code print(1), pool %7.2f ms   host python3 -c %7.2f ms   ratio %s (goal <= 1.50)\n' \
		"$s" "$h" "$(ratio "$s" "$h")"
	# the same from a client that keeps its connection (as RL frameworks'
	# HTTP sessions do): the request's own latency, no client spawn
	k=$(python3 -S tests/bench/keepalive_client.py "$(cat "$work/port")" "$work/token" "$rounds")
	printf 'serve /run_code print(1), kept connection %7.2f ms   host python3 -c %7.2f ms   ratio %s (goal <= 1.50)\n' \
		"$k" "$h" "$(ratio "$k" "$h")"
	# 3b. one request at a time, the pool keeping up: a server with
	# --prestart against this one and the host, alternated (#39)
	"$sc" serve --ephemeral --prestart --listen 127.0.0.1:0 --token-file "$work/token" \
		--port-file "$work/port.pre" --pool 2 >/dev/null 2>"$work/serve-pre.err" &
	srv2=$!
	for _ in $(seq 600); do [ -s "$work/port.pre" ] && break; sleep 0.1; done
	python3 -S tests/bench/prestart_bench.py "$(cat "$work/port.pre")" "$(cat "$work/port")" \
		"$work/token" "$((rounds / 2 > 10 ? rounds / 2 : 10))" 0.3 "$py"
	kill -TERM "$srv2" && wait "$srv2" 2>/dev/null || true
	# 4. every language's hello world through /run_code (kept connection)
	# against the host compiling and running it in a fresh directory,
	# alternated; then a MultiPL-E-shaped sweep (#33)
	lang_rounds=$((rounds / 10 > 3 ? rounds / 10 : 3))
	echo "hello world per language, median of $lang_rounds, alternated with the host:"
	python3 -S tests/bench/lang_bench.py hello "$(cat "$work/port")" "$work/token" "$lang_rounds" $BENCH_LANGS
	python3 -S tests/bench/lang_bench.py sweep "$(cat "$work/port")" "$work/token" 16 \
		${BENCH_SWEEP_LANGS:-python javascript c cpp java go ruby perl lua php}
fi
