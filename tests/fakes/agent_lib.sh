# Helpers for the agent tests (tests/integration/t_agent*.sh): start the
# scripted LLM server (fake_llm.py) on an ephemeral port, run `sandcell
# agent` against it as the test user, and query what the run left on disk.
# Source after tests/lib.sh.

: "${SRCDIR:?SRCDIR must point at the source tree}"
FAKE_PY="$SRCDIR/tests/fakes/fake_llm.py"
SCENARIOS="$SRCDIR/tests/fakes/scenarios"
FAKE_PID=""

if ! command -v python3 >/dev/null; then
	echo "# python3 is needed for the fake LLM server"
	exit 77
fi

# start_fake SCENARIO_FILE: sets FAKE_PORT and FAKE_LOG.
start_fake() {
	local pf
	pf=$(mktemp -u "$T_DIR/fake-port.XXXXXX")
	FAKE_LOG=$(mktemp "$T_DIR/fake-log.XXXXXX")
	python3 -S "$FAKE_PY" --scenario "$1" --log "$FAKE_LOG" --port-file "$pf" \
		--idle-exit 300 >/dev/null 2>"$T_DIR/fake-stderr" </dev/null &
	FAKE_PID=$!
	for _ in $(seq 1200); do
		[ -s "$pf" ] && break
		sleep 0.05
	done
	FAKE_PORT=$(cat "$pf" 2>/dev/null)
	if [ -z "$FAKE_PORT" ]; then
		echo "FAIL - the fake LLM server did not start: $(cat "$T_DIR/fake-stderr")"
		exit 1
	fi
}

stop_fake() {
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null
		wait "$FAKE_PID" 2>/dev/null
		FAKE_PID=""
	fi
}
trap 'stop_fake; t_cleanup' EXIT

# agent NAME SCENARIO [ARGS...]: run `sandcell agent` against a fresh fake
# server replaying tests/fakes/scenarios/SCENARIO.json, with the output
# directory RUN=$T_WORK/NAME. ARGS end with the problem. Sets OUT ERR RC.
# AGENT_API=anthropic switches the wire format.
agent() {
	local name=$1 scen=$2 base
	shift 2
	start_fake "$SCENARIOS/$scen.json"
	RUN="$T_WORK/$name"
	if [ "${AGENT_API:-openai}" = anthropic ]; then
		base="http://127.0.0.1:$FAKE_PORT"
	else
		base="http://127.0.0.1:$FAKE_PORT/v1"
	fi
	sc agent --api "${AGENT_API:-openai}" --base-url "$base" --model fake-model \
		--out "$RUN" --retry-base-ms 10 "$@"
	stop_fake
}

# q EXPR: evaluate a Python expression over what the last run left:
# t = trajectory.json, ev = events.jsonl (list), log = the fake server's
# request log (list), obs = the observations of all steps (list),
# answer = answer.txt or None. Prints str() of the result (JSON for lists
# and dicts).
q() {
	python3 -S - "$RUN" "$FAKE_LOG" "$1" <<'PY'
import json, os, sys
run, logf, expr = sys.argv[1:4]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
def lines(p):
    try:
        with open(p) as f:
            return [json.loads(l) for l in f if l.strip()]
    except OSError:
        return []
t = load(os.path.join(run, "trajectory.json")) or {}
ev = lines(os.path.join(run, "events.jsonl"))
log = lines(logf)
obs = [s.get("observation", "") for s in t.get("steps", [])]
try:
    with open(os.path.join(run, "answer.txt")) as f:
        answer = f.read()
except OSError:
    answer = None
v = eval(expr)
print(json.dumps(v) if isinstance(v, (list, dict)) else v)
PY
}

# qtrue DESCRIPTION EXPR: a check that the Python expression is true.
qtrue() {
	local r
	r=$(q "bool($2)" 2>&1)
	if [ "$r" = True ]; then pass "$1"; else
		fail "$1"
		echo "       expression: $2 -> $r"
	fi
}

# No cell of the test user is left running.
no_cells_left() {
	sc ps
	[ "$RC" -eq 0 ] && [ "$(printf '%s\n' "$OUT" | grep -c '^agent-')" -eq 0 ]
}
