#!/usr/bin/env bash
# sandcell benchmarks, each against a peer measured in the same run:
#   1. cold start: `sandcell run -- /bin/true` and `python3 -c pass` against
#      bubblewrap (--unshare-all, /usr read-only, merged-/usr links, /proc,
#      /dev, /tmp), alternating, ROUNDS runs each; medians and ratios; and
#      this machine's floor (build/tests/floor: clone into all namespaces,
#      one overlay, exec /bin/true, nothing else) in the same rounds;
#   2. the default seccomp policy's cost on the start path (against
#      "seccomp": null), and Landlock's (against "landlock": false);
#   3. warm exec into a live cell against bubblewrap's cold /bin/true, and
#      a bare spawn of /bin/true on the host (no cell) as the floor;
#   4. pool acquire+exec+release throughput (cells per second), with new
#      and with renewed cells, one renewal against a create + remove, and the
#      floor's starts per second from as many processes as cores;
#   5. the agent's per-step overhead (scripts/bench_agent.sh);
#   6. batch throughput against the latency-bound ideal (scripts/bench_batch.sh);
#   7. egress: an allowlist's cold-start cost and the proxy's download
#      throughput against a direct download (scripts/bench_egress.sh);
#   8. serve: /run_code print(1) at concurrency 16 against host spawns of
#      python3, exec through the API against a host spawn (scripts/bench_serve.sh).
#   9. code: a warm session's print(1) round trip and a one-shot code run
#      against python3 spawned on the host (scripts/bench_code.sh).
#  10. python: `with SandboxSession() as s: s.run("print(1)")` from the
#      Python client against subprocess.run(python3 -c) (scripts/bench_python.sh).
#  11. density: DENSITY (default 300) idle long-lived cells at once: create
#      and remove rates, host memory per cell, an exec into the last one
#      against a host spawn (scripts/bench_density.sh; #20 asks for 2,000).
#  12. e2b: commands.run('true') through the E2B SDK against POST
#      /cells/{id}/exec of the same command, and create-to-first-command
#      (scripts/bench_e2b.sh; needs node and npm).
# usage: scripts/bench.sh [ROUNDS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}
[ -x build/sandcell ] || scripts/setup.sh
cmake --build build --target alt pool_bench floor >/dev/null
alt=build/tests/alt
floor=$PWD/build/tests/floor
sc=$PWD/build/sandcell
work=$(mktemp -d /tmp/sandcell-bench.XXXXXX)
chmod 755 "$work"
export SANDCELL_ROOT="$work/root"
trap 'build/sandcell rm -f bench-warm >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

bwrap_cmd=(bwrap --unshare-all --die-with-parent --ro-bind /usr /usr)
for l in bin sbin lib lib32 lib64 libx32; do
	if [ -L "/$l" ]; then bwrap_cmd+=(--symlink "$(readlink "/$l")" "/$l"); fi
done
bwrap_cmd+=(--proc /proc --dev /dev --tmpfs /tmp)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# alt prints "INDEX MEDIAN P90 CPU-MEDIAN" per command (ms).
med() { awk -v i="$1" '$1 == i { print $2 }' <<<"$2"; }

echo "sandcell benchmarks: $(nproc) cores, kernel $(uname -r), $rounds rounds each"
echo

out=$($alt "$rounds" ::: "$sc" run -- /bin/true ::: "${bwrap_cmd[@]}" /bin/true ::: "$floor" \
	::: "$sc" run --pids 0 --memory 0 -- /bin/true)
s=$(med 1 "$out") b=$(med 2 "$out") f=$(med 3 "$out") n=$(med 4 "$out")
printf 'cold /bin/true      sandcell %7.2f ms   bwrap %7.2f ms   ratio %s (goal <= 0.60)\n' "$s" "$b" "$(ratio "$s" "$b")"
printf '                    machine floor %5.2f ms = %s x bwrap; sandcell = %s x floor (goal <= 1.40, #20)\n' "$f" "$(ratio "$f" "$b")" "$(ratio "$s" "$f")"
# without limits there is no cgroup: the difference is the cgroup's (on v1,
# mostly the grace period its first move waits for: docs/performance.md)
printf '                    without a cgroup (--pids 0 --memory 0) %.2f ms = %s x floor\n' "$n" "$(ratio "$n" "$f")"

out=$($alt "$rounds" ::: "$sc" run -- python3 -c pass ::: "${bwrap_cmd[@]}" python3 -c pass)
s=$(med 1 "$out") b=$(med 2 "$out")
printf 'cold python3 -c pass sandcell %7.2f ms   bwrap %7.2f ms   ratio %s\n' "$s" "$b" "$(ratio "$s" "$b")"

echo '{"seccomp": null}' >"$work/nofilter.json"
out=$($alt "$rounds" ::: "$sc" run -- /bin/true ::: "$sc" run --policy "$work/nofilter.json" -- /bin/true)
s=$(med 1 "$out") n=$(med 2 "$out")
printf 'policy cost         default %7.2f ms   no filter %7.2f ms   cost %s%% (goal < 10%%)\n' "$s" "$n" \
	"$(awk -v a="$s" -v b="$n" 'BEGIN { printf "%.1f", (a - b) / b * 100 }')"

# Landlock (issue 36): the policy's "landlock": false is the peer
echo '{"landlock": false}' >"$work/nolandlock.json"
out=$($alt "$rounds" ::: "$sc" run -- /bin/true ::: "$sc" run --policy "$work/nolandlock.json" -- /bin/true)
s=$(med 1 "$out") n=$(med 2 "$out")
printf 'landlock cost       default %7.2f ms   landlock off %7.2f ms   cost %s%% (goal <= 3%%)\n' "$s" "$n" \
	"$(awk -v a="$s" -v b="$n" 'BEGIN { printf "%.1f", (a - b) / b * 100 }')"

"$sc" create bench-warm >/dev/null
out=$($alt "$rounds" ::: "$sc" exec bench-warm -- /bin/true ::: "${bwrap_cmd[@]}" /bin/true ::: /bin/true)
s=$(med 1 "$out") b=$(med 2 "$out") t=$(med 3 "$out")
printf 'warm exec /bin/true  sandcell %7.2f ms   bwrap cold %7.2f ms   ratio %s (goal <= 0.20)\n' "$s" "$b" "$(ratio "$s" "$b")"
printf '                    floor: /bin/true spawned on the host, no cell, %.2f ms = %s x bwrap; sandcell = %s x floor (goal <= 2.00, #20)\n' "$t" "$(ratio "$t" "$b")" "$(ratio "$s" "$t")"
"$sc" rm -f bench-warm >/dev/null

read -r rate median < <(build/tests/pool_bench "$rounds" 16 "$(nproc)")
printf 'pool                 %.0f cells/s (goal >= 300), median acquire+exec+release %.2f ms\n' "$rate" "$median"
bare=$($floor -n "$rounds" -j "$(nproc)")
printf '                    machine floor: %s bare starts/s from %d processes; pool = %s x floor (goal >= 0.70, #20)\n' "$bare" "$(nproc)" "$(ratio "$rate" "$bare")"
read -r rrate rmedian < <(build/tests/pool_bench "$rounds" 16 "$(nproc)" reuse)
printf 'pool, cells renewed  %.0f cells/s, median acquire+exec+release %.2f ms; = %s x floor (goal >= 1.00, #39)\n' \
	"$rrate" "$rmedian" "$(ratio "$rrate" "$bare")"
read -r renew fresh < <(build/tests/pool_bench renew "$rounds")
printf 'renewal             p50 %.2f ms   create + remove p50 %.2f ms   ratio %s; a cell is renewed without bound\n' \
	"$renew" "$fresh" "$(ratio "$renew" "$fresh")"
printf '                    unless --max-reuse N (serve, batch) replaces it after N renewals\n'

if [ -x scripts/bench_agent.sh ]; then
	scripts/bench_agent.sh
fi
if [ -x scripts/bench_batch.sh ]; then
	scripts/bench_batch.sh
fi
if [ -x scripts/bench_egress.sh ]; then
	scripts/bench_egress.sh "$rounds"
fi
if [ -x scripts/bench_serve.sh ]; then
	scripts/bench_serve.sh "$rounds"
fi
if [ -x scripts/bench_code.sh ]; then
	scripts/bench_code.sh "$rounds"
fi
if [ -x scripts/bench_python.sh ]; then
	scripts/bench_python.sh "$rounds"
fi
if [ -x scripts/bench_e2b.sh ] && command -v node >/dev/null && command -v npm >/dev/null; then
	scripts/bench_e2b.sh "$rounds"
fi
if [ -x scripts/bench_density.sh ]; then
	scripts/bench_density.sh "${DENSITY:-300}"
fi
