# Helpers for the batch tests (tests/integration/t_batch*.sh): the scripted
# LLM server in conversation mode (replies keyed by the problem, so many
# episodes can run at once), and queries over a run directory. Source after
# tests/lib.sh.

: "${SRCDIR:?SRCDIR must point at the source tree}"
FAKE_PY="$SRCDIR/tests/fakes/fake_llm.py"
FAKE_PID=""

if ! command -v python3 >/dev/null; then
	echo "# python3 is needed for the fake LLM server"
	exit 77
fi

# start_conv RULES_FILE [FAKE ARGS...]: sets FAKE_PORT, FAKE_LOG, FAKE_URL.
start_conv() {
	local rules=$1 pf
	shift
	pf=$(mktemp -u "$T_DIR/fake-port.XXXXXX")
	FAKE_LOG=$(mktemp "$T_DIR/fake-log.XXXXXX")
	python3 -S "$FAKE_PY" --conversations "$rules" --log "$FAKE_LOG" --port-file "$pf" \
		--idle-exit 300 "$@" >/dev/null 2>>"$T_DIR/fake-stderr" </dev/null &
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
	FAKE_URL="http://127.0.0.1:$FAKE_PORT/v1"
}

stop_conv() {
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null
		wait "$FAKE_PID" 2>/dev/null
		FAKE_PID=""
	fi
}

# Make everything under the scratch directory the test user's.
give_to_user() {
	[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$T_WORK"
	return 0
}

# rq DIR EXPR: evaluate a Python expression over DIR's results:
# res = list of result objects (complete lines), by = {(id, repeat): obj},
# lines = raw lines, log = the fake server's request log.
rq() {
	python3 -S - "$1" "${FAKE_LOG:-/dev/null}" "$2" <<'PY'
import json, os, sys
d, logf, expr = sys.argv[1:4]
try:
    raw = open(os.path.join(d, "results.jsonl")).read()
except OSError:
    raw = ""
lines = raw.split("\n")
partial = lines.pop()  # "" when the file ends with a newline
res = [json.loads(l) for l in lines if l.strip()]
by = {(r["id"], r["repeat"]): r for r in res}
def loadlog(p):
    out = []
    try:
        for l in open(p):
            if l.strip():
                out.append(json.loads(l))
    except OSError:
        pass
    return out
log = loadlog(logf)
v = eval(expr)
print(json.dumps(v) if isinstance(v, (list, dict)) else v)
PY
}

# rtrue DESCRIPTION DIR EXPR
rtrue() {
	local r
	r=$(rq "$2" "bool($3)" 2>&1)
	if [ "$r" = True ]; then pass "$1"; else
		fail "$1"
		echo "       expression: $3 -> $r"
	fi
}


BG_PIDS=""
trap 'for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done; stop_conv; t_cleanup' EXIT

# The conversation rules most tests use. A problem says what the fake model
# does: "say <<X>>" writes X to answer.txt in three steps, "FILE <<X>>"
# leaves X in output/result.txt, "DOC NAME" answers with a document's
# content, "VANILLA say <<X>>" (no tools) replies with \boxed{X}.
write_rules() {
	cat >"$1" <<'JSON'
{"rules": [
 {"match": "VANILLA say <<(.*?)>>", "responses": [{"content": "Reasoning done. \\boxed{{{1}}}"}]},
 {"match": "DOC (\\S+)", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cat /testbed/documents/{{1}} > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "FILE <<(.*?)>>", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "printf '%s\\n' '{{1}}' > /testbed/output/result.txt && echo done > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "say <<(.*?)>>", "responses": [
   {"content": "Let me look around first.", "tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo working in $(pwd)"}}]},
   {"tool_calls": [{"name": "str_replace_editor", "arguments": {"command": "create", "path": "/testbed/answer.txt", "file_text": "{{1}}"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
}
