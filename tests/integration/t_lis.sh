#!/usr/bin/env bash
# The reference harness (LLM-in-Sandbox) as users bring it: its YAML prompt
# configs and its flag spellings on `sandcell agent`, against the scripted
# LLM server; the configs are written here in the reference's format.
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

W="$T_WORK/lis"
mkdir -p "$W/input"
echo "the secret is 77" >"$W/input/data.txt"
cat >"$W/prompt_config.yaml" <<'YAML'
system_prompt: |-
  You solve problems. Inputs are in {input_dir}; write the answer to {output_dir}/answer.txt.
  Keep \\boxed{{}} and {other} braces as they are.
instance_prompt: |-
  <problem>
  {problem_statement}
  </problem>
  Working directory: {working_dir}
working_dir: /work
input_dir: /work/in
output_dir: /work/out
YAML
cat >"$W/scen.json" <<'JSON'
[
  {"content": "Read the input.",
   "tool_calls": [{"name": "execute_bash", "arguments": {"command": "pwd && cat in/data.txt"}}]},
  {"expect_in_request": ["the secret is 77"],
   "content": "Answer.",
   "tool_calls": [{"name": "execute_bash",
                   "arguments": {"command": "echo 77 > /work/out/answer.txt && echo art > /work/out/extra.txt"}}]},
  {"content": "Done.", "tool_calls": [{"name": "submit", "arguments": {}}]}
]
JSON
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$W"

# lis NAME ARGS...: `sandcell agent` with only the reference's spellings.
lis() {
	local name=$1
	shift
	start_fake "$W/scen.json"
	RUN="$T_WORK/$name"
	sc agent --llm_base_url "http://127.0.0.1:$FAKE_PORT/v1" --llm_name fake-model \
		--output_dir "$RUN" --retry-base-ms 10 "$@"
	stop_fake
}

lis cfg -q --prompt_config "$W/prompt_config.yaml" --input_dir "$W/input" --max_steps 5 \
	--temperature 0.3 --extra_body '{"top_k": 5}' --query "What is the secret?"
check "a prompt-config episode exits 0" expect_rc 0
check "the answer is read from {output_dir}/answer.txt" out_is 77
qtrue "the system prompt is sent as the reference renders it: directories replaced, {{}} as {} (str.format), other braces kept" \
	'log[0]["body"]["messages"][0] == {"role": "system", "content": "You solve problems. Inputs are in /work/in; write the answer to /work/out/answer.txt.\nKeep \\\\boxed{} and {other} braces as they are."}'
qtrue "the instance prompt is the first user message, verbatim" \
	'log[0]["body"]["messages"][1] == {"role": "user", "content": "<problem>\nWhat is the secret?\n</problem>\nWorking directory: /work"}'
qtrue "commands run in working_dir and input files are in input_dir (a relative cat)" \
	'"/work\nthe secret is 77" in obs[0]'
qtrue "files left in output_dir are copied out" 'open(run + "/files/extra.txt").read() == "art\n"'
qtrue "the model name came from --llm_name" 'log[0]["body"]["model"] == "fake-model"'
qtrue "--temperature and --extra_body reach the request" \
	'log[0]["body"]["temperature"] == 0.3 and log[0]["body"]["top_k"] == 5'

# environment variables of the reference
start_fake "$W/scen.json"
RUN="$T_WORK/env"
T_EXTRA_ENV="LLM_NAME=env-model LLM_BASE_URL=http://127.0.0.1:$FAKE_PORT/v1 LLM_API_KEY=sk-lis-0123456789 LLM_TEMPERATURE=0.5" \
	sc agent -q --out "$RUN" --prompt-config "$W/prompt_config.yaml" --input "$W/input" "Secret?"
stop_fake
check "LLM_* environment: exits 0" expect_rc 0
qtrue "LLM_NAME, LLM_TEMPERATURE and LLM_API_KEY are used" \
	'log[0]["body"]["model"] == "env-model" and log[0]["body"]["temperature"] == 0.5 and log[0]["headers"].get("authorization", log[0]["headers"].get("Authorization")) == "Bearer sk-lis-0123456789"'

# refusals and one-line errors
sc agent --api_key sk-xyz --model m "p"
check "--api_key is refused (exit 125)" expect_rc 125
check "the refusal names LLM_API_KEY" bash -c 'printf "%s" "$0" | grep -q "LLM_API_KEY" && [ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ]' "$ERR"

bad() { # bad DESC FILE-CONTENT WORD
	printf '%s\n' "$2" >"$W/bad.yaml"
	sc agent --model m --prompt-config "$W/bad.yaml" "p"
	check "$1: exit 125" expect_rc 125
	check "$1: one line naming it" bash -c \
		'[ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ] && printf "%s" "$0" | grep -q -- "$1"' "$ERR" "$3"
}
bad "no instance_prompt" 'system_prompt: hi' "no instance_prompt"
bad "a placeholder typo" $'system_prompt: "in {input_dri}"\ninstance_prompt: "{problem_statement}"' "{input_dri}"
bad "not YAML" $'system_prompt: [unclosed\ninstance_prompt: x' "not YAML"
bad "not a mapping" '- a list' "not a YAML mapping"

# ---- benchmark folders (sandcell batch --benchmark), in the reference's
# layout: BENCH/demo/{config.yaml,data.json,reward.py,vanilla_llm_prompt.py}
B="$W/bench"
mkdir -p "$B/demo" "$B/hub" "$B/broken"
cat >"$B/demo/config.yaml" <<'YAML'
# Option 1: Local JSON file
dataset: "json"
data_files: "demo/data.json"
split: "train"
system_prompt: |-
  BENCH-SYS work={working_dir} in={input_dir} out={output_dir}, answers in \\boxed{{}}
instance_prompt: |-
  <problem>
  {problem_statement}
  </problem>
  Write the answer to {output_dir}/answer.txt
input_dir: "/testbed/input"
output_dir: "/testbed/out"
working_dir: "/testbed/work"
YAML
cat >"$B/demo/data.json" <<'JSON'
[
 {"id": "sum", "domain": "demo", "problem_statement": "SUM numbers.txt", "ground_truth": "42",
  "weight": 0.25, "input_files": {"numbers.txt": "17\n25\n", "sub/nested.txt": "deep", "skip.txt": null}},
 {"id": "pwd", "problem_statement": "PWD", "ground_truth": "/testbed/work",
  "input_files": "{\"a.txt\": \"from a JSON string\"}"},
 {"id": "wrong", "problem_statement": "SAY <<nope>>", "ground_truth": "yes", "input_files": {}},
 {"id": "boom", "problem_statement": "SAY <<x>>", "ground_truth": "x", "boom": true},
 {"id": "bad-name", "problem_statement": "SAY <<x>>", "ground_truth": "x", "input_files": {"../escape.txt": "no"}},
 {"problem_statement": "no id", "ground_truth": "x"}
]
JSON
cat >"$B/demo/reward.py" <<'PY'
import json, os

def compute_score(agent_answer, ground_truth, **kwargs):
    print("reward chatter on stdout")
    if kwargs.get("boom"):
        raise ValueError("boom in " + kwargs["id"])
    assert {"id", "problem_statement"} <= set(kwargs) and "ground_truth" not in kwargs
    ok = 1.0 if agent_answer.strip().lower() == str(ground_truth).strip().lower() else 0.0
    return ok * kwargs.get("weight", 1)
PY
cat >"$B/demo/vanilla_llm_prompt.py" <<'PY'
def create_prompt(problem_data):
    return "VANILLA[" + problem_data["problem_statement"] + "] id=" + problem_data["id"]
PY
sed 's/^dataset: .*/dataset: "daixuancheng\/llm-in-sandbox-bench"\nconfig: "math"/; /^data_files/d' \
	"$B/demo/config.yaml" >"$B/hub/config.yaml"
cp "$B/demo/reward.py" "$B/hub/"
printf '%s\n' '{"id": "h1", "problem_statement": "PLAIN <<yes>>", "ground_truth": "yes"}' \
	'{"id": "h2", "problem_statement": "PLAIN <<no>>", "ground_truth": "yes"}' >"$B/hub.jsonl"
cp "$B/demo/config.yaml" "$B/broken/config.yaml"
printf '%s\n' '{"id": "z", "problem_statement": "SAY <<x>>", "ground_truth": "x"}' >"$B/broken.jsonl"
printf 'import no_such_module_for_sandcell\ndef compute_score(a, g, **k):\n    return 1.0\n' \
	>"$B/broken/reward.py"
cat >"$W/rules.json" <<'JSON'
{"rules": [
 {"match": "VANILLA\\[PLAIN <<(.*?)>>\\]", "responses": [{"content": "{{1}}"}]},
 {"match": "PLAIN <<(.*?)>>", "responses": [{"content": "{{1}}"}]},
 {"match": "SUM (\\S+)", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "awk '{s+=$1} END {print s}' /testbed/input/{{1}} > /testbed/out/answer.txt; cat /testbed/input/sub/nested.txt > /testbed/out/nested.txt; ls /testbed/input > /testbed/out/listing.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "PWD", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "pwd > /testbed/out/answer.txt; cp ../input/a.txt /testbed/out/"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "SAY <<(.*?)>>", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo '  {{1}}  ' > /testbed/out/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$W"

# start_rules: the fake server in conversation mode (replies keyed by the problem)
start_rules() {
	local pf
	pf=$(mktemp -u "$T_DIR/fake-port.XXXXXX")
	FAKE_LOG=$(mktemp "$T_DIR/fake-log.XXXXXX")
	chmod 666 "$FAKE_LOG"
	python3 -S "$FAKE_PY" --conversations "$W/rules.json" --log "$FAKE_LOG" --port-file "$pf" \
		--idle-exit 300 >/dev/null 2>"$T_DIR/fake-stderr" </dev/null &
	FAKE_PID=$!
	for _ in $(seq 1200); do
		[ -s "$pf" ] && break
		sleep 0.05
	done
	FAKE_PORT=$(cat "$pf" 2>/dev/null)
	[ -n "$FAKE_PORT" ] || { echo "FAIL - the fake LLM server did not start"; exit 1; }
}
# rq EXPR over RUN's results.jsonl (res: list, by: id -> line) and the server log
rq() {
	python3 -S - "$RUN" "$FAKE_LOG" "$1" <<'PY'
import json, os, sys
d, logf, expr = sys.argv[1:4]
res = [json.loads(l) for l in open(os.path.join(d, "results.jsonl")) if l.strip()]
by = {r["id"]: r for r in res}
log = [json.loads(l) for l in open(logf) if l.strip()]
first = {}
for e in log:
    msgs = (e.get("body") or {}).get("messages") or []
    user = [m["content"] for m in msgs if m.get("role") == "user"]
    if user and len([m for m in msgs if m.get("role") == "assistant"]) == 0:
        first[user[0]] = e["body"]
print(bool(eval(expr)))
PY
}
rtrue() {
	local r
	r=$(rq "$2" 2>&1)
	if [ "$r" = True ]; then pass "$1"; else
		fail "$1"
		echo "       expression: $2 -> $r"
	fi
}
bench() {
	sc batch --llm_base_url "http://127.0.0.1:$FAKE_PORT/v1" --llm_name fake-model \
		--retry-base-ms 10 --concurrency 2 -q "$@"
}

start_rules
RUN="$W/run-demo"
bench --benchmark "$B/demo" --out "$RUN"
check "a benchmark folder runs (exit 0)" expect_rc 0
check "a problem without an id is reported and skipped" bash -c 'printf "%s" "$0" | grep -q "data.json:6: no \"id\""' "$ERR"
check "a bad input_files name is reported and skipped" bash -c 'printf "%s" "$0" | grep -q "data.json:5: \"input_files\": bad file name"' "$ERR"
rtrue "one result per good problem, data_files found relative to the folder's parent" \
	'sorted(by) == ["boom", "pwd", "sum", "wrong"]'
rtrue "the system prompt arrives as the reference renders it (placeholders replaced, {{}} as {})" \
	'len(first) == 4 and all(b["messages"][0] == {"role": "system", "content": "BENCH-SYS work=/testbed/work in=/testbed/input out=/testbed/out, answers in \\\\boxed{}"} for b in first.values())'
rtrue "the instance prompt is the first user message, verbatim" \
	'"<problem>\nPWD\n</problem>\nWrite the answer to /testbed/out/answer.txt" in first'
rtrue "input_files are written into input_dir (nested, null skipped) and reward.py's float is the score" \
	'by["sum"]["score"] == 0.25 and by["sum"]["scorer"] == "reward" and by["sum"]["expected"] == "42"'
check "the nested input file was in place" grep -qx deep "$RUN/attempts/sum/0/files/nested.txt"
check "a null input file is skipped" bash -c '! grep -q skip "$0"' "$RUN/attempts/sum/0/files/listing.txt"
rtrue "input_files given as a JSON string are written too; commands run in working_dir" \
	'by["pwd"]["score"] == 1.0'
check "the JSON-string input file was in place" grep -qx "from a JSON string" "$RUN/attempts/pwd/0/files/a.txt"
rtrue "the answer is stripped as the reference reads it; a wrong one scores 0" \
	'by["wrong"]["score"] == 0.0 and by["wrong"]["answer"].strip() == "nope"'
rtrue "a raising reward scores 0 with the error kept in the result line" \
	'by["boom"]["score"] == 0 and "ValueError: boom in boom" in by["boom"]["reward_error"] and by["boom"]["status"] == "submitted" and by["boom"]["error"] is None'
check "what reward.py prints is kept in reward.log" grep -q "reward chatter on stdout" "$RUN/attempts/sum/0/reward.log"

before=$(sha256sum "$RUN/results.jsonl")
bench --benchmark "$B/demo" --out "$RUN"
check "a rerun resumes: exit 0, nothing run again" bash -c '[ "$0" -eq 0 ] && [ "$1" = "$(sha256sum "$2")" ]' "$RC" "$before" "$RUN/results.jsonl"
sc batch summarize --json "$RUN"
check "summarize reads the run (4 attempts, mean 0.3125)" bash -c \
	'printf "%s" "$0" | python3 -S -c "import json,sys; s=json.load(sys.stdin); sys.exit(not (s[\"attempts\"] == 4 and abs(s[\"mean_score\"] - 0.3125) < 1e-9))"' "$OUT"
python3 -S "$SRCDIR/scripts/lis_trajectory.py" "$RUN" -o "$W/judge-input.json"
check "scripts/lis_trajectory.py writes the reference's run-level trajectory.json (judge.py's input)" \
	python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))
s = d["sum"]
sys.exit(not (sorted(d) == ["boom", "pwd", "sum", "wrong"] and s["problem_statement"] == "SUM numbers.txt"
    and s["reward"] == 0.25 and s["agent_answer"] == "42" and s["ground_truth"] == "42"
    and s["trajectory"][0]["action"]["function"] == "execute_bash"))' "$W/judge-input.json"
sc batch export --format rl "$RUN"
check "export rl writes one line per attempt" bash -c '[ "$(printf "%s\n" "$0" | grep -c .)" -eq 4 ]' "$OUT"

# vanilla mode: create_prompt's text is the one message, no system prompt, no tools
RUN="$W/run-vanilla"
: >"$FAKE_LOG"
bench --benchmark "$B/hub" --data "$B/hub.jsonl" --mode vanilla --out "$RUN"
check "vanilla mode with --data runs (exit 0)" expect_rc 0
rtrue "without vanilla_llm_prompt.py the problem statement is sent as it is" \
	'sorted(by) == ["h1", "h2"] and by["h1"]["score"] == 1.0 and by["h2"]["score"] == 0.0'
rtrue "the request has only the user message and no tools" \
	'all(len(b["messages"]) == 1 and "tools" not in b for b in first.values()) and "PLAIN <<yes>>" in first'
stop_fake
start_rules
RUN="$W/run-vanilla2"
cp "$B/demo/vanilla_llm_prompt.py" "$B/hub/"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$B"
bench --benchmark "$B/hub" --data "$B/hub.jsonl" --mode llm --out "$RUN"
check "vanilla mode (the reference's --mode llm) with vanilla_llm_prompt.py runs (exit 0)" expect_rc 0
rtrue "vanilla mode calls create_prompt (run in a cell) and sends its text verbatim" \
	'"VANILLA[PLAIN <<yes>>] id=h1" in first and len(first["VANILLA[PLAIN <<yes>>] id=h1"]["messages"]) == 1 and by["h1"]["score"] == 1.0'
stop_fake

# batch's --prompt-config is freed on the ways out too (an ASan build reports a leak)
sc batch --prompt_config "$W/prompt_config.yaml" --model m
check "batch --prompt-config without a task file: exit 125" expect_rc 125
sc batch "$W/none.jsonl" --prompt_config "$W/prompt_config.yaml"
check "batch --prompt-config without a model: exit 125" expect_rc 125

# errors: a hub dataset without --data, a reward that cannot be imported
sc batch --benchmark "$B/hub" --model m
check "a hub dataset without --data: exit 125" expect_rc 125
check "... one line saying to save it as JSON and pass --data" bash -c \
	'[ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ] && printf "%s" "$0" | grep -q "llm-in-sandbox-bench" && printf "%s" "$0" | grep -q -- "--data FILE" && printf "%s" "$0" | grep -q JSON' "$ERR"
sc batch --benchmark "$B/hub" --data "$B/hub.jsonl" --model m --query "x"
check "batch refuses --query (exit 125)" expect_rc 125
sc batch "$B/hub.jsonl" --benchmark "$B/hub" --model m
check "a task file and --benchmark together: exit 125" expect_rc 125
start_rules
RUN="$W/run-broken"
bench --benchmark "$B/broken" --data "$B/broken.jsonl" --out "$RUN"
check "a reward.py that cannot be imported stops the run before any episode (exit 125)" expect_rc 125
check "... in one line naming the missing module" bash -c \
	'[ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ] && printf "%s" "$0" | grep -q "No module named .no_such_module_for_sandcell."' "$ERR"
check "... and no model request was made" bash -c '! grep -q . "$0"' "$FAKE_LOG"
stop_fake
finish
