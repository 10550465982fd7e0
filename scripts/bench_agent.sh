#!/usr/bin/env bash
# Per-step overhead of `sandcell agent`: a scripted 50-step episode
# (execute_bash `true` each step, then submit) against the fake LLM server
# on loopback. The overhead of a step is the time from the server sending
# reply N to it receiving request N+1, on the server's clock: everything
# sandcell does in a step (parse the reply, run the tool in the cell,
# append to events.jsonl, rewrite trajectory.json, build and send the next
# request) with the server's own time taken out.
#
# usage: scripts/bench_agent.sh [SANDCELL_BINARY]   (default: build/sandcell)
# env:   BENCH_AGENT_STEPS (default 50), BENCH_AGENT_RUNS (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${SANDCELL:-build/sandcell}}
steps=${BENCH_AGENT_STEPS:-50}
runs=${BENCH_AGENT_RUNS:-3}
[ -x "$bin" ] || { echo "bench_agent: no sandcell binary at $bin (build first)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/sandcell-bench-agent.XXXXXX)
spid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export SANDCELL_ROOT="$tmp/root"

python3 -c "
import json, sys
n = int(sys.argv[1])
print(json.dumps([
    {'repeat': n, 'tool_calls': [{'name': 'execute_bash', 'arguments': {'command': 'true'}}]},
    {'tool_calls': [{'name': 'submit', 'arguments': {}}]},
]))" "$steps" >"$tmp/scenario.json"

for r in $(seq "$runs"); do
	python3 -S tests/fakes/fake_llm.py --scenario "$tmp/scenario.json" --log "$tmp/log.$r" \
		--port-file "$tmp/port.$r" --idle-exit 120 >/dev/null 2>&1 </dev/null &
	spid=$!
	for _ in $(seq 200); do [ -s "$tmp/port.$r" ] && break; sleep 0.05; done
	"$bin" agent --base-url "http://127.0.0.1:$(cat "$tmp/port.$r")/v1" --model bench -q \
		--max-steps $((steps + 5)) --out "$tmp/run.$r" "benchmark" >/dev/null
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	spid=""
done

# The floor of a step's tool: execute_bash runs `bash -c CMD`; the same
# spawned directly on the host, with no cell and no agent.
alt=$(dirname "$bin")/tests/alt
bash_ms=$([ -x "$alt" ] && "$alt" 100 ::: bash -c true | awk '{ print $2 }' || echo 0)

python3 - "$tmp" "$runs" "$steps" "$bash_ms" <<'PY'
import json, statistics, sys
tmp, runs, steps, bash_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
over, execs, loop, server, cpu = [], [], [], [], []
for r in range(1, runs + 1):
    log = [json.loads(l) for l in open("%s/log.%d" % (tmp, r))]
    ev = [json.loads(l) for l in open("%s/run.%d/events.jsonl" % (tmp, r))]
    tools = [e for e in ev if e["type"] == "tool_result" and e["function"] == "execute_bash"]
    assert len(tools) == steps, "expected %d tool calls, got %d" % (steps, len(tools))
    # gaps between reply i and request i+1, for the steps that ran `true`
    gaps = [(log[i + 1]["t_recv"] - log[i]["t_sent"]) * 1000 for i in range(steps)]
    ex = [e["exec_time_s"] * 1000 for e in tools]
    over += gaps
    execs += ex
    loop += [g - x for g, x in zip(gaps, ex)]  # per step: what is not the exec
    server += [x["server_ms"] for x in log]
    t = json.load(open("%s/run.%d/trajectory.json" % (tmp, r)))
    cpu.append(t["timings"]["agent_cpu_s"] * 1000 / (steps + 1))
m = statistics.median
print("agent: %d runs x %d steps; median per-step overhead %.2f ms "
      "(of which the cell exec of `true` %.2f ms, the agent loop %.2f ms); "
      "sandcell's own CPU %.2f ms per step (setup included); "
      "server %.2f ms per request; goal < 3 ms"
      % (runs, steps, m(over), m(execs), m(loop), m(cpu), m(server)))
if bash_ms > 0:
    print("agent floor: `bash -c true` spawned on the host (no cell, no agent) takes %.2f ms; "
          "the step beyond it: %.2f ms (median of the steps' differences; goal <= 1.0 ms, #20)"
          % (bash_ms, m([g - bash_ms for g in over])))
PY

