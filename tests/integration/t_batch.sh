#!/usr/bin/env bash
# sandcell batch against the scripted LLM server: a 20-task file with every
# scorer gives the expected scores, bad lines are reported and skipped,
# unknown fields are kept, a rerun resumes, summarize and export (sft, rl)
# read the run, and vanilla mode sends no tools and inlines the documents.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

W=$T_WORK
write_rules "$W/rules.json"
mkdir -p "$W/docs1" "$W/checker"
printf 'code-4242\n' >"$W/docs1/secret.txt"
printf 'the second document\n' >"$W/docs1/more.txt"
cat >"$W/checker/check.sh" <<'SH'
test "$(cat answer.txt)" = "$(cat expected.txt)"
SH
# id, problem, answer, scorer; the expected score is in EXPECT below
cat >"$W/tasks.jsonl" <<'JSONL'
{"id": "e1", "problem": "say <<Paris>>", "answer": "Paris", "scorer": "exact"}
{"id": "e2", "problem": "say <<paris>>", "answer": "Paris", "scorer": "exact"}
this line is not json
{"id": "n1", "problem": "say <<3.14159>>", "answer": 3.1416, "scorer": {"type": "numeric", "tolerance": 1e-4}}
{"id": "n2", "problem": "say <<The answer is 1,000.>>", "answer": 1000, "scorer": "numeric"}
{"id": "n3", "problem": "say <<42>>", "answer": 43, "scorer": "numeric"}
{"id": "nop", "answer": "no problem field"}
{"id": "c1", "problem": "say <<The answer is (B)>>", "answer": "B", "scorer": "choice"}
{"id": "c2", "problem": "say <<A, C>>", "answer": ["A", "C", "D"], "scorer": "choice"}
{"id": "c3", "problem": "say <<D>>", "answer": "A", "scorer": "choice"}
{"id": "b1", "problem": "say <<so \\boxed{\\dfrac{1}{2}}>>", "answer": "0.5", "scorer": "boxed"}
{"id": "b2", "problem": "say <<\\boxed{7}>>", "answer": "\\boxed{8}", "scorer": "boxed"}
{"id": "k1", "problem": "say <<the capital is Paris>>", "answer": "Paris", "scorer": "contains"}
{"id": "k2", "problem": "say <<Lyon>>", "answer": "Paris", "scorer": "contains"}

{"id": "m1", "problem": "FILE <<hello>>", "scorer": {"type": "command", "command": "grep -qx hello output/result.txt"}}
{"id": "m2", "problem": "FILE <<bye>>", "scorer": {"type": "command", "command": "grep -qx hello output/result.txt"}}
{"id": "m3", "problem": "say <<0.25>>", "scorer": {"type": "command", "command": "echo checking; cat answer.txt; exit 3"}}
{"id": "m4", "problem": "say <<x>>", "answer": "x", "scorer": {"type": "command", "command": "sh checker/check.sh", "files": "checker"}}
{"id": "d1", "problem": "DOC secret.txt", "answer": "code-4242", "input_dir": "docs1"}
{"id": "e1", "problem": "say <<a duplicate id>>"}
{"id": "d2", "problem": "say <<yes>>", "answer": "yes"}
{"id": "u1", "problem": "say <<free>>"}
{"id": "x1", "problem": "say <<9>>", "answer": 9, "scorer": "numeric", "metadata": {"level": 2}, "subject": "algebra"}
JSONL
give_to_user
EXPECT='{"e1":1,"e2":0,"n1":1,"n2":1,"n3":0,"c1":1,"c2":0.8,"c3":0,"b1":1,"b2":0,"k1":1,"k2":0,"m1":1,"m2":0,"m3":0.25,"m4":1,"d1":1,"d2":1,"u1":None,"x1":1}'

start_conv "$W/rules.json"
RUN="$W/run1"
batch() {
	sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 \
		--out "$RUN" --concurrency 4 "$@"
}
batch
check "a 20-task batch with three bad lines exits 0" expect_rc 0
check "bad line 3 (not JSON) is reported with its number" err_has 'tasks.jsonl:3: not valid JSON'
check "bad line 7 (no problem) is reported" err_has 'tasks.jsonl:7: no "problem"'
check "bad line 21 (duplicate id) is reported" err_has 'tasks.jsonl:21: duplicate id "e1"'
rtrue "one result line per task, 20 in all" "$RUN" "len(res) == 20 and len(by) == 20 and partial == ''"
rtrue "every scorer gives the expected score" "$RUN" \
	"all((by[(k,0)]['score'] is None) if v is None else abs(by[(k,0)]['score'] - v) < 1e-9 for k, v in $EXPECT.items())"
rtrue "every attempt was submitted, with steps and tokens" "$RUN" \
	"all(r['status'] == 'submitted' and r['steps'] >= 2 and r['input_tokens'] > 0 and r['error'] is None for r in res)"
rtrue "a result names its answer, expected value, scorer and directory" "$RUN" \
	"by[('n1',0)]['answer'] == '3.14159' and by[('n1',0)]['expected'] == '3.1416' and by[('n1',0)]['scorer'] == 'numeric' and by[('n1',0)]['dir'] == 'attempts/n1/0'"
rtrue "tasks without a scorer use --scorer's default (exact)" "$RUN" "by[('d2',0)]['scorer'] == 'exact'"
rtrue "unknown fields and metadata are kept in the result" "$RUN" \
	"by[('x1',0)]['subject'] == 'algebra' and by[('x1',0)]['metadata'] == {'level': 2}"
rtrue "input_dir is copied to /testbed/documents" "$RUN" "by[('d1',0)]['answer'].strip() == 'code-4242'"
check "each attempt directory holds the trajectory, events, answer and files" \
	test -s "$RUN/attempts/m1/0/trajectory.json" -a -s "$RUN/attempts/m1/0/events.jsonl" \
	-a -s "$RUN/attempts/m1/0/answer.txt" -a -s "$RUN/attempts/m1/0/files/result.txt"
check "the command scorer's output is kept in checker.log" grep -q 'score 0.25' "$RUN/attempts/m3/0/checker.log"
check "the summary gives the mean score and the status counts" \
	bash -c 'printf "%s" "$OUT" | grep -q "mean 0.6342 over 19 scored" && printf "%s" "$OUT" | grep -q "submitted 20, max_steps 0, episode_timeout 0, error 0"'
check "no cell is left" no_cells

# one system prompt: `sandcell agent` with the same options sends the bytes
# a batch episode sent (its cell came ready from a pool: the prompt must
# still say what the spec says of the network, here that there is none)
sc agent --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 --out "$W/single" \
	-q "say <<Paris>>"
check "a single agent run of a batch task exits 0" expect_rc 0
FIRSTS="[r['body'] for r in log if isinstance(r.get('body'), dict) and len(r['body'].get('messages', [])) == 2 and 'say <<Paris>>' in str(r['body']['messages'][1]['content'])]"
rtrue "agent and batch both asked the model (one first request each)" "$RUN" "len($FIRSTS) == 2"
rtrue "agent and batch send the same system prompt and tools for the same options" "$RUN" \
	"len($FIRSTS) == 2 and $FIRSTS[0]['messages'][0] == $FIRSTS[1]['messages'][0] and $FIRSTS[0]['tools'] == $FIRSTS[1]['tools']"
rtrue "... which says the machine has no network" "$RUN" \
	"all('no network access' in b['messages'][0]['content'] for b in $FIRSTS)"

# resume: the same command runs nothing and keeps one line per attempt
before=$(sha256sum "$RUN/results.jsonl")
batch
check "a rerun of a finished batch exits 0" expect_rc 0
check "a rerun runs no attempt again" err_has '20 attempts, 0 to run'
check "a rerun leaves results.jsonl as it was" test "$before" = "$(sha256sum "$RUN/results.jsonl")"
batch --repeat 2 -q
check "--repeat 2 afterwards runs only the 20 second attempts" expect_rc 0
rtrue "--repeat 2: 40 lines, one per (id, repeat)" "$RUN" "len(res) == 40 and len(by) == 40"

sc batch summarize "$RUN"
check "summarize prints the same summary, with pass@k over the repeats" \
	bash -c 'printf "%s" "$OUT" | grep -q "40 attempts of 20 tasks" && printf "%s" "$OUT" | grep -q "pass@1 0.5789 pass@2 0.5789"'
sc batch summarize --json "$RUN"
check "summarize --json is one JSON object" bash -c 'printf "%s" "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"attempts\"] == 40 and d[\"repeats\"] == 2 and abs(d[\"pass_at_k\"][\"2\"] - 11 / 19) < 1e-9"'

# export: OpenAI chat JSONL with tool calls
sc batch export "$RUN" --format sft -o "$W/sft.jsonl"
check "export sft exits 0" expect_rc 0
cat >"$W/check_sft.py" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == int(sys.argv[2]), (len(lines), sys.argv[2])
for d in lines:
    assert set(d) == {"messages", "tools"}, d.keys()
    msgs = d["messages"]
    assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
    assert {m["role"] for m in msgs} == {"system", "user", "assistant", "tool"}
    ids = set()
    for m in msgs:
        if m["role"] == "assistant":
            for c in m.get("tool_calls", []):
                assert c["type"] == "function"
                json.loads(c["function"]["arguments"])  # arguments are JSON text
                ids.add(c["id"])
        if m["role"] == "tool":
            assert m["tool_call_id"] in ids, m
    names = {t["function"]["name"] for t in d["tools"]}
    assert names == {"execute_bash", "str_replace_editor", "submit"}, names
print("ok")
PY
correct=$(rq "$RUN" "sum(1 for r in res if r['score'] is not None and r['score'] >= 1)")
check "export sft: one chat per attempt that scored 1, roles and tool calls valid" \
	bash -c "python3 '$W/check_sft.py' '$W/sft.jsonl' '$correct' >/dev/null"
sc batch export "$RUN" --format rl -o "$W/rl.jsonl"
check "export rl exits 0" expect_rc 0
check "export rl: every attempt with its reward, prompt and ground truth" bash -c 'python3 -c "
import json, sys
ls = [json.loads(l) for l in sys.stdin if l.strip()]
assert len(ls) == 40, len(ls)
for d in ls:
    assert isinstance(d[\"reward\"], (int, float)) and d[\"prompt\"][-1][\"role\"] == \"user\"
    assert d[\"messages\"][-1][\"role\"] == \"tool\"
assert any(d[\"id\"] == \"c2\" and abs(d[\"reward\"] - 0.8) < 1e-9 and d[\"reward_model\"][\"ground_truth\"] == \"A,C,D\" for d in ls)
" <"'"$W/rl.jsonl"'"'

# vanilla: the same model without tools, documents inlined
cat >"$W/vanilla.jsonl" <<'JSONL'
{"id": "v1", "problem": "VANILLA say <<7>> using the documents", "answer": "7", "scorer": "boxed", "input_dir": "docs1"}
{"id": "v2", "problem": "VANILLA say <<8>>", "answer": "9", "scorer": "boxed"}
JSONL
give_to_user
: >"$FAKE_LOG"
sc batch "$W/vanilla.jsonl" --mode vanilla --base-url "$FAKE_URL" --model fake-model --out "$W/van" -q
check "a vanilla batch exits 0" expect_rc 0
rtrue "vanilla: the reply is the answer and is scored" "$W/van" \
	"by[('v1',0)]['score'] == 1 and by[('v2',0)]['score'] == 0 and by[('v1',0)]['mode'] == 'vanilla' and by[('v1',0)]['steps'] == 1"
rtrue "vanilla: no request carries tools" "$W/van" "len(log) == 2 and all('tools' not in e['body'] for e in log)"
rtrue "vanilla: the documents are inlined in the prompt" "$W/van" \
	"any('<document path=\"secret.txt\">\ncode-4242\n</document>' in u and 'the second document' in u for u in [e['body']['messages'][1]['content'] for e in log])"
rtrue "vanilla: the other task has no documents" "$W/van" \
	"any('VANILLA say <<8>>' in json.dumps(e['body']) and '<documents>' not in json.dumps(e['body']) for e in log)"
check "no cell is left" no_cells

# option errors are one line and exit 125
sc batch "$W/tasks.jsonl" --model m --concurrency 0
check "--concurrency 0 is refused" bash -c '[ "$RC" -eq 125 ] && [ "$(printf "%s\n" "$ERR" | grep -c .)" -eq 1 ]'
# above the old cap of 1024: the open-file limit decides, checked up front
( ulimit -n 256; sc batch "$W/tasks.jsonl" --model m --base-url "$FAKE_URL" --concurrency 2000 \
	--out "$W/run-fds"; printf '%s\n%s' "$RC" "$ERR" >"$W/fds.out" )
RC=$(head -n1 "$W/fds.out") ERR=$(tail -n +2 "$W/fds.out")
check "--concurrency 2000 under a 256 open-file limit is a one-line 125 error naming the limit" \
	bash -c '[ "$RC" -eq 125 ] && [ "$(printf "%s\n" "$ERR" | grep -c .)" -eq 1 ] && printf "%s" "$ERR" | grep -q "open files, but the limit is 256"'
check "... and nothing was run" test ! -e "$W/run-fds/results.jsonl"
printf '{"id": "big1", "problem": "say <<41>>", "answer": "41"}\n' >"$W/one.jsonl"
give_to_user
sc batch "$W/one.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$W/run-big" --concurrency 2000 -q
check "--concurrency 2000 (above the old cap of 1024) runs" bash -c '[ "$RC" -eq 0 ] && grep -q "\"score\": *1" "$0"' "$W/run-big/results.jsonl"
sc batch "$W/tasks.jsonl" --model m --keep
check "--keep is refused with a reason" bash -c '[ "$RC" -eq 125 ] && printf "%s" "$ERR" | grep -q "sandcell agent --keep"'
T_EXTRA_ENV="JOB_COMPLETION_INDEX=1" sc batch "$W/tasks.jsonl" --model m --base-url "$FAKE_URL"
check "an Indexed Job without --shards is refused" bash -c '[ "$RC" -eq 125 ] && printf "%s" "$ERR" | grep -q -- "--shards N"'

finish
