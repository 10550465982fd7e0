#!/usr/bin/env bash
# Before/after a change on the server's hot paths: `sandcell serve` of an
# older build (server 0) and of build/sandcell (server 1) side by side,
# the same requests alternating between them round by round
# (tests/bench/ab_serve.py), each against its host floor spawned in the
# same rounds: /run_code print(1) (pool cells), /cells/{id}/run print(1)
# (a kept cell), /cells/{id}/exec /bin/true.
# usage: scripts/bench_ab_serve.sh OLD_SANDCELL [ROUNDS]   (default 60)
#   e.g. git worktree add /tmp/old HEAD~3 && cmake -S /tmp/old -B /tmp/old/build
#        && cmake --build /tmp/old/build --target sandcell
#        && scripts/bench_ab_serve.sh /tmp/old/build/sandcell
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: scripts/bench_ab_serve.sh OLD_SANDCELL [ROUNDS]}
rounds=${2:-60}
[ -x build/sandcell ] || scripts/setup.sh
work=$(mktemp -d /tmp/sandcell-ab.XXXXXX)
chmod 755 "$work"
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait; rm -rf "$work"' EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/token"
k=0
for bin in "$old" "$PWD/build/sandcell"; do
	SANDCELL_ROOT="$work/root$k" "$bin" serve --listen 127.0.0.1:0 --token-file "$work/token" \
		--port-file "$work/port$k" --pool 2 >/dev/null 2>"$work/err$k" &
	pids+=($!)
	k=$((k + 1))
done
for i in $(seq 600); do [ -s "$work/port0" ] && [ -s "$work/port1" ] && break; sleep 0.1; done
[ -s "$work/port0" ] && [ -s "$work/port1" ] || { echo "a server did not start"; cat "$work"/err*; exit 1; }
echo "server 0: $old   server 1: $PWD/build/sandcell   $rounds rounds"
for route in run_code cell_run exec; do
	r=$rounds
	[ "$route" = exec ] && r=$((rounds * 5))
	python3 tests/bench/ab_serve.py "$(cat "$work/port0"),$(cat "$work/port1")" "$work/token" "$r" "$route"
done
