#!/usr/bin/env bash
# sandcell batch against a hostile model server (fake_llm.py's hostile
# modes): the key a server echoes stays out of results.jsonl and the
# summary line, the key a model writes into its answer stays out of the
# results and the exports, task ids that would collide or be cut are told
# apart or refused, SFT export has no unanswered tool call, a checker that
# timed out has a status of its own, and a symlinked input_dir is refused.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

W=$T_WORK
TAIL="$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
KEY="sk-test-q\"b\\s-$TAIL"
KEY_PRINTF=$(printf '%s' "$KEY" | od -An -tx1 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//; s/ /\\x/g; s/^/\\x/')
export KEY_PRINTF

cat >"$W/rules.json" <<'JSON'
{"rules": [
 {"match": "ECHO401", "responses": [
   {"status": 401, "body": {"error": {"message": "Incorrect API key provided: %%AUTH%%", "type": "invalid_request_error"}}}]},
 {"match": "KEYANSWER", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "printf '@@KEY_PRINTF@@' > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "SUBMITTHEN", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo ok > /testbed/answer.txt"}},
                   {"name": "submit", "arguments": {}},
                   {"name": "execute_bash", "arguments": {"command": "echo never run"}}]}]},
 {"match": "BIGANSWER", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "head -c 5000000 /dev/zero | tr '\\0' a > /testbed/answer.txt; head -c 300000 /dev/zero > /testbed/output/big.bin"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "ANSWER <<(.*?)>>", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo '{{1}}' > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
mkdir -p "$W/docs"
echo doc >"$W/docs/a.txt"
ln -s docs "$W/docslink"
# x_y-becfa9197f2d6333 is what the id x/y used to map to (FNV-1a of "x/y")
cat >"$W/tasks.jsonl" <<'JSONL'
{"id": "k401", "problem": "ECHO401", "answer": "x"}
{"id": "kans", "problem": "KEYANSWER", "answer": "x"}
{"id": "sft1", "problem": "SUBMITTHEN", "answer": "ok"}
{"id": "x/y", "problem": "ANSWER <<first>>", "answer": "first"}
{"id": "x_y-becfa9197f2d6333", "problem": "ANSWER <<second>>", "answer": "second"}
{"id": "nul\u0000two", "problem": "ANSWER <<nul-two>>"}
{"id": "nul", "problem": "ANSWER <<nul>>"}
{"id": "slow", "problem": "ANSWER <<s>>", "scorer": {"type": "command", "command": "sleep 120", "timeout": 2}}
{"id": "lnk", "problem": "ANSWER <<l>>", "input_dir": "docslink"}
{"id": "esc\u001b[2J", "problem": "ANSWER <<e>>"}
{"id": "big", "problem": "BIGANSWER", "answer": "x"}
JSONL
give_to_user

start_conv "$W/rules.json"
RUN="$W/run"
T_EXTRA_ENV="OPENAI_API_KEY=$KEY" sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--retry-base-ms 10 --out "$RUN" --concurrency 2 --files-limit 100000
check "the batch runs to the end (exit 1: one attempt failed)" expect_rc 1
BERR=$ERR
printf '%s' "$BERR" >"$T_DIR/batch-err"

# secrets
rtrue "the echoed key's 401 is an error that still says what the server said" "$RUN" \
	"by[('k401',0)]['status'] == 'error' and 'Incorrect API key provided' in by[('k401',0)]['error']"
check "the key is not in results.jsonl" bash -c '! grep -qF -- "$0" "$1"' "$TAIL" "$RUN/results.jsonl"
check "the key is not on stderr (the last error shown)" bash -c '! grep -qF -- "$0" <<<"$1"' "$TAIL" "$BERR"
check "the key is in none of the run's files" bash -c '! grep -rqF -- "$0" "$1"' "$TAIL" "$RUN"
rtrue "the answer holding the key is blanked in results.jsonl" "$RUN" \
	"by[('kans',0)]['answer'].strip('\n') == '*' * $(printf '%s' "$KEY" | wc -c)"
sc batch export "$RUN" --format rl -o "$W/rl.jsonl"
check "export rl exits 0" expect_rc 0
check "the key is not in the rl export" bash -c '! grep -qF -- "$0" "$1"' "$TAIL" "$W/rl.jsonl"

# ids
check "an id with a NUL is refused with its line number" bash -c 'grep -q "tasks.jsonl:6: .*NUL" <<<"$0"' "$BERR"
rtrue "the id nul is no duplicate of the refused one, and runs" "$RUN" \
	"('nul',0) in by and not any(r['id'].startswith('nul') and r['id'] != 'nul' for r in res)"
check "an id with an escape sequence is refused" bash -c 'grep -q "tasks.jsonl:10: .*control" <<<"$0"' "$BERR"
check "no control character of a task id reached stderr" /usr/bin/python3 -c '
import re, sys
b = open(sys.argv[1], "rb").read()
sys.exit(1 if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b) else 0)' "$T_DIR/batch-err"
rtrue "x/y and x_y-becfa9197f2d6333 have attempt directories of their own" "$RUN" \
	"by[('x/y',0)]['dir'] != by[('x_y-becfa9197f2d6333',0)]['dir']"
rtrue "... and each kept its own answer and score" "$RUN" \
	"by[('x/y',0)]['score'] == 1 and by[('x_y-becfa9197f2d6333',0)]['score'] == 1"
XDIRS=$(rq "$RUN" "' '.join(by[(i, 0)]['dir'] for i in ('x/y', 'x_y-becfa9197f2d6333'))")
check "... and both attempts' conversations are there" \
	bash -c 'for d in $1; do [ -s "$0/$d/conversation.json" ] || exit 1; done' "$RUN" "$XDIRS"

# the checker timed out: counted apart, with a message
rtrue "a checker that timed out: status checker_timeout and a message saying so" "$RUN" \
	"by[('slow',0)]['status'] == 'checker_timeout' and 'timed out' in by[('slow',0)]['error'] and by[('slow',0)]['score'] == 0"

# an answer over 4 MiB and output over --files-limit: fields of their own
rtrue "an answer over 4 MiB: answer_error says so, the status stays" "$RUN" \
	"by[('big',0)]['status'] == 'submitted' and by[('big',0)]['answer'] is None and 'larger than 4 MiB' in by[('big',0)]['answer_error']"
rtrue "output over --files-limit: files_truncated with a note" "$RUN" \
	"by[('big',0)]['files_truncated'] is True and '--files-limit' in by[('big',0)]['files_note']"
sc batch summarize "$RUN" --json
check "summarize --json exits 0" expect_rc 0
printf '%s' "$OUT" >"$T_DIR/summary.json"
check "summarize counts checker_timeout, answer_errors and files_truncated apart" /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["status"]["checker_timeout"] == 1 and "other" not in j["status"], j
assert j["answer_errors"] == 1 and j["files_truncated"] == 1, j' "$T_DIR/summary.json"
sc batch summarize "$RUN"
check "summarize (text) shows them" bash -c 'grep -q "checker_timeout 1" <<<"$0" && grep -q "answer not kept 1" <<<"$0" && grep -q "files cut 1" <<<"$0"' "$OUT"

# a symlinked input_dir
check "a symlinked input_dir is refused with its line and what to do" \
	bash -c 'grep -q "tasks.jsonl:9: .*symlink.*directory it points to" <<<"$0"' "$BERR"

# SFT export: every tool call has its tool message
sc batch export "$RUN" --format sft -o "$W/sft.jsonl"
check "export sft exits 0" expect_rc 0
check "export sft: every exported tool call has its tool message (the call after submit is gone)" \
	/usr/bin/python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    msgs = json.loads(line)["messages"]
    for i, m in enumerate(msgs):
        for c in m.get("tool_calls") or []:
            n += 1
            answered = {t.get("tool_call_id") for t in msgs[i + 1:] if t["role"] == "tool"}
            assert c["id"] in answered, c
    if any("never run" in json.dumps(m) for m in msgs):
        sys.exit("the unanswered call is still there")
assert n > 0
' "$W/sft.jsonl"

stop_conv
check "no cell is left behind" no_cells
finish
