#!/usr/bin/env bash
# sandcell agent: whole episodes against the scripted LLM server, checked
# the way a user would: the answer printed, the exit status, and what the
# run left on disk (trajectory.json, events.jsonl, answer.txt, files/).
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

# --- a multi-step solve: create a script, run it, write answer.txt, submit ---
agent solve solve -q "What is 1 + 2 + ... + 100?"
check "a submitted episode exits 0" expect_rc 0
check "stdout is the answer" out_is 5050
qtrue "status is submitted" 't["status"] == "submitted"'
qtrue "answer.txt holds the answer" 'answer == "5050\n"'
qtrue "four steps in the reference shape" \
	'[s["action"]["function"] for s in t["steps"]] == ["str_replace_editor", "execute_bash", "execute_bash", "submit"] and t["metadata"]["total_steps"] == 4'
qtrue "each step has thought, reasoning_content, action, observation, metadata" \
	'all(set(s) >= {"thought", "reasoning_content", "action", "observation", "metadata"} and set(s["metadata"]) >= {"step", "exec_time"} for s in t["steps"])'
qtrue "the problem statement is kept" 't["problem_statement"] == "What is 1 + 2 + ... + 100?"'
qtrue "reasoning_content is taken from the reply" 't["steps"][0]["reasoning_content"].startswith("The sum of 1..100")'
qtrue "the script's output is the observation" 'obs[1] == "Exit code: 0\n[stdout]\n5050"'
qtrue "the model saw the output (the fake checked its request)" 'all(r.get("status") == 200 for r in log)'
qtrue "the problem was sent wrapped in <problem>" '"<problem>\nWhat is 1 + 2" in log[0]["body"]["messages"][1]["content"]'
qtrue "the system prompt names answer.txt and /testbed/output" \
	'"/testbed/answer.txt" in log[0]["body"]["messages"][0]["content"] and "/testbed/output" in log[0]["body"]["messages"][0]["content"]'
qtrue "the system prompt says the machine has no network" \
	'"no network access" in log[0]["body"]["messages"][0]["content"]'
check "... and its run directory has no egress log" test ! -e "$RUN/egress.jsonl"
qtrue "exactly the three reference tools are offered" \
	'[x["function"]["name"] for x in log[0]["body"]["tools"]] == ["execute_bash", "str_replace_editor", "submit"]'
qtrue "each turn carries Steps remaining" \
	'"Steps remaining: 100" in log[0]["body"]["messages"][1]["content"] and log[1]["body"]["messages"][-1]["content"].endswith("Steps remaining: 99")'
qtrue "tool results answer their tool_call_id" \
	'log[1]["body"]["messages"][-1]["role"] == "tool" and log[1]["body"]["messages"][-1]["tool_call_id"] == "call_0_0"'
qtrue "usage tokens are totalled" 't["usage"]["input_tokens"] == 100 + 110 + 120 + 130 and t["usage"]["output_tokens"] == 80'
qtrue "events.jsonl has a request and a response per model turn" \
	'[e["type"] for e in ev].count("request") == 4 and [e["type"] for e in ev].count("response") == 4'
qtrue "events record latency and usage, and tool exec times" \
	'all("latency_s" in e and "usage" in e for e in ev if e["type"] == "response") and all("exec_time_s" in e for e in ev if e["type"] == "tool_result")'
qtrue "the artifact in /testbed/output was copied to files/" \
	'open(run + "/files/result.txt").read() == "sum=5050\n" and open(run + "/files/sub/deep.txt").read() == "nested\n"'
check "the run's files belong to the user who ran it" \
	bash -c '[ "$(stat -c %u "$0/trajectory.json")" = "$1" ] && [ "$(stat -c %u "$0/files/result.txt")" = "$1" ]' "$RUN" "$T_UID"
check "no cell is left behind" no_cells_left
# with an allowlist the prompt says where packages may come from
agent solve-net solve --allow-net pypi.org --allow-net '*.example.org:8443' -q "What is 1 + 2 + ... + 100?"
check "an episode with an allowlist exits 0" expect_rc 0
check "... its run directory keeps the cell's egress decision log" test -f "$RUN/egress.jsonl"
qtrue "... and its system prompt names the allowed hosts, not 'no network'" \
	'"only these hosts: pypi.org, *.example.org:8443." in log[0]["body"]["messages"][0]["content"] and "no network access" not in log[0]["body"]["messages"][0]["content"]'


# --- the Anthropic Messages API, same episode ---
AGENT_API=anthropic T_EXTRA_ENV="ANTHROPIC_API_KEY=sk-ant-test-0123456789" agent anth solve -q "Sum 1..100"
check "anthropic: exits 0" expect_rc 0
check "anthropic: prints the answer" out_is 5050
qtrue "anthropic: posted to /v1/messages with x-api-key and anthropic-version" \
	'all(r["path"] == "/v1/messages" and r["headers"].get("x-api-key") == "sk-ant-test-0123456789" and "anthropic-version" in r["headers"] for r in log)'
qtrue "anthropic: system prompt beside the messages, tools with input_schema" \
	'"answer.txt" in log[0]["body"]["system"] and all("input_schema" in x for x in log[0]["body"]["tools"])'
qtrue "anthropic: tool results go back as tool_result blocks" \
	'[b["type"] for b in log[1]["body"]["messages"][-1]["content"]] == ["tool_result", "text"] and log[1]["body"]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_0_0"'
qtrue "anthropic: thinking is the reasoning_content" 't["steps"][0]["reasoning_content"].startswith("The sum of 1..100")'
qtrue "anthropic: the trajectory matches" 't["status"] == "submitted" and len(t["steps"]) == 4 and obs[1].endswith("5050")'

# --- documents from --input, read by the model ---
docs="$T_WORK/docs"
mkdir -p "$docs/sub"
echo "the code is 4242" >"$docs/notes.txt"
echo "second document" >"$docs/sub/more.txt"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$docs"
agent docs documents -q --input "$docs" "What is the code in the notes?"
check "documents: exits 0 with the answer" bash -c '[ "$0" -eq 0 ] && [ "$1" = 4242 ]' "$RC" "$OUT"
qtrue "documents: the model listed and read /testbed/documents" \
	'"the code is 4242" in obs[0] and "more.txt" in obs[0] and "second document" in obs[1]'

# --- a reply without a tool call gets a reminder ---
agent notool no_tool -q "What is 6 * 7?"
check "no tool call: the episode goes on and submits" expect_rc 0
check "no tool call: answer printed" out_is 42
qtrue "no tool call: a step with an empty action and the reminder" \
	't["steps"][0]["action"]["function"] == "" and "did not call a tool" in obs[0] and t["steps"][0]["thought"] == "I think the answer is 42."'

# --- max steps ---
agent maxsteps max_steps -q --max-steps 3 "Never finishes"
check "max steps: exit status 2" expect_rc 2
qtrue "max steps: status and step count" 't["status"] == "max_steps" and t["metadata"]["total_steps"] == 3 and len(log) == 3'
qtrue "max steps: the last turn says it is the last" '"last step" in log[2]["body"]["messages"][-1]["content"]'
check "max steps: the partial answer is still printed" out_is partial

# --- --json, problem from a file and from stdin ---
printf 'Sum 1..100 from a file\n' >"$T_WORK/problem.txt"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534 "$T_WORK/problem.txt"
agent json solve -q --json "@$T_WORK/problem.txt"
check "--json: exits 0" expect_rc 0
check "--json: one object with status, answer, steps and out_dir" \
	bash -c '[ "$(json_field status)" = submitted ] && [ "$(json_field answer)" = 5050 ] && [ "$(json_field steps)" = 4 ] && [ "$(json_field out_dir)" = "$0" ]' "$RUN"
qtrue "@FILE: the problem is the file's text" 't["problem_statement"] == "Sum 1..100 from a file\n"'

start_fake "$SCENARIOS/solve.json"
RUN="$T_WORK/stdin"
o=$(printf 'Sum from stdin' | as_user "$SC_BIN" agent --base-url "http://127.0.0.1:$FAKE_PORT/v1" \
	--model m -q --out "$RUN" - 2>"$T_DIR/stdin-err")
RC=$? OUT=$o ERR=$(cat "$T_DIR/stdin-err")
stop_fake
check "'-': the problem is read from stdin" bash -c '[ "$0" -eq 0 ] && [ "$1" = 5050 ]' "$RC" "$OUT"
qtrue "'-': problem statement recorded" 't["problem_statement"] == "Sum from stdin"'

# --- --keep leaves the cell running and names it ---
agent keep solve --keep "keep the cell"
cell=$(printf '%s\n' "$ERR" | sed -n 's/^sandcell: agent: kept cell \(agent-[0-9a-f]*\)$/\1/p')
check "--keep names the cell on stderr" test -n "$cell"
sc exec "$cell" -- cat /testbed/answer.txt
check "--keep: the cell still has the model's files" out_is 5050
sc rm -f "$cell"
check "the kept cell can be removed" expect_rc 0

# a kept cell of a stored image records it: ps shows it, image rm refuses
if [ -x /bin/busybox ]; then
	python3 "$SRCDIR/tests/integration/image_tool.py" docker "$T_DIR/base.tar"
	chmod a+r "$T_DIR/base.tar"
	sc image import "$T_DIR/base.tar" agentimg
	check "a stored image for the agent imports" expect_rc 0
	agent keepimg solve --keep --image agentimg "keep the cell"
	cell=$(printf '%s\n' "$ERR" | sed -n 's/^sandcell: agent: kept cell \(agent-[0-9a-f]*\)$/\1/p')
	check "--keep --image: the cell is kept" test -n "$cell"
	sc ps --json
	check "ps shows the kept cell's image" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
c=[x for x in json.load(sys.stdin) if x[\"name\"]==sys.argv[1]]
sys.exit(0 if c and c[0][\"image\"]==\"agentimg\" else 1)" "$1"' "$OUT" "$cell"
	sc image rm agentimg
	check "image rm refuses an image a kept agent cell uses" bash -c '[ "$0" -ne 0 ] && grep -q "$1" <<<"$2"' "$RC" "$cell" "$ERR"
	sc rm -f "$cell"
	sc image rm agentimg
	check "the image can be removed once the cell is gone" expect_rc 0
fi

# --- bad usage ---
sc agent --model m
check "no problem: exit 125" expect_rc 125
check "no problem: one line on stderr" err_one_line
sc agent "a problem"
check "no model: exit 125 and says --model" bash -c '[ "$0" -eq 125 ] && grep -q -- "--model" <<<"$1"' "$RC" "$ERR"
sc agent --model m --api-key sk-nope "p"
check "--api-key on the command line is refused" bash -c '[ "$0" -eq 125 ] && grep -q "not taken on the command line" <<<"$1"' "$RC" "$ERR"
sc agent --model m --extra-body '[1]' --base-url http://127.0.0.1:9/v1 --out "$T_WORK/eb" "p"
check "--extra-body must be a JSON object" bash -c '[ "$0" -eq 125 ] && grep -q "extra-body" <<<"$1"' "$RC" "$ERR"

check "no cell is left behind at the end" no_cells_left
finish
