#!/usr/bin/env bash
# sandcell agent against a hostile or broken model server (fake_llm.py's
# hostile modes, all on loopback): a server that echoes the key, rate-limit
# hints in both headers, background jobs that must outlive their command,
# invalid UTF-8 from an Anthropic server, too many tool calls, oversized
# arguments and answers, a redirect, and escape sequences aimed at the
# user's terminal. (The batch side is t_batch_hostile.sh.)
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

# A key with a quote and a backslash in it: JSON spells it differently
# (\" and \\), so only a redaction of the raw values catches it.
TAIL="$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
KEY="sk-test-q\"b\\s-$TAIL"
# the part no redaction artefact or JSON spelling can produce by chance
no_key_in() { # DIR-OR-FILE...
	! grep -rqF -- "$TAIL" "$@"
}

# --- the key echoed in a 401's error message ---
T_EXTRA_ENV="OPENAI_API_KEY=$KEY" agent echo401 hostile_echo_401 -q --json "p"
check "401 echoing the key: the run fails" bash -c '[ "$0" -ne 0 ]' "$RC"
check "401 echoing the key: the message is still shown" bash -c 'grep -q "Incorrect API key provided" <<<"$0"' "$ERR$OUT"
check "401 echoing the key: not on stderr" bash -c '! grep -qF -- "$0" <<<"$1"' "$TAIL" "$ERR"
check "401 echoing the key: not in --json's error" bash -c '! grep -qF -- "$0" <<<"$1" && grep -q "\"error\"" <<<"$1"' "$TAIL" "$OUT"
check "401 echoing the key: not in any record" no_key_in "$RUN"

# --- the key echoed in a reply, and written into the answer by the model ---
# (the command spells the key with printf escapes, past any redaction of
# the reply: the answer itself must be redacted)
KEY_PRINTF=$(printf '%s' "$KEY" | od -An -tx1 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//; s/ /\\x/g; s/^/\\x/')
export KEY_PRINTF
T_EXTRA_ENV="OPENAI_API_KEY=$KEY" agent echokey hostile_echo_key -q "p"
check "key in replies: the episode submits" expect_rc 0
qtrue "key in replies: the server did receive the key" \
	'all("'"$TAIL"'" in r["headers"].get("authorization", "") for r in log)'
check "key in replies: not in events.jsonl, trajectory.json, conversation.json" \
	no_key_in "$RUN/events.jsonl" "$RUN/trajectory.json" "$RUN/conversation.json"
check "key in replies: the records show where it was blanked" grep -q '\*\*\*\*\*\*\*\*' "$RUN/conversation.json"
check "key in the answer: not printed" bash -c '! grep -qF -- "$0" <<<"$1$2"' "$TAIL" "$OUT" "$ERR"
check "key in the answer and output files: not in answer.txt, files/ or anything else the run wrote" no_key_in "$RUN"
check "key in output files: the file is copied out, blanked" grep -q '^log: \*\*\*\*' "$RUN/files/sub/k.txt"
check "key in the answer: the answer is the blanked key" bash -c '[ "$0" = "$(printf "%s" "$1" | tr -c "\n" "*")" ]' "$OUT" "$KEY"

# --- retry hints: retry-after-ms converted before the cap, the larger of both ---
agent retry hostile_retry_after -q --max-attempts 5 "p"
check "retry hints: the episode submits after three refusals" expect_rc 0
qtrue "retry hints: retry-after-ms 1500 alone waits 1.5 s, 100 ms with Retry-After 2 waits 2 s, Retry-After 1 alone 1 s" \
	'[e["retry_after_s"] for e in ev if e.get("type") == "response" and "retry_after_s" in e] == [1.5, 2, 1]'
qtrue "retry hints: the client did wait at least that long between attempts" \
	'log[1]["t_recv"] - log[0]["t_recv"] >= 1.45 and log[2]["t_recv"] - log[1]["t_recv"] >= 1.95'

# --- background jobs live on after their command; a timeout still kills ---
export BG_MARK="$$$RANDOM"
agent background hostile_background -q --command-timeout 10 "p"
check "background: the episode submits" expect_rc 0
qtrue "background: the commands that left jobs behind return at once" \
	'obs[0].endswith("started") and obs[1].endswith("more")'
qtrue "background: nohup, setsid and a plain & job are all alive a command later" \
	'obs[2].split("\n")[-3:] == ["alive", "alive", "alive"]'
qtrue "background: a command that timed out is gone with its group" \
	'"timed out" in obs[3] and "timed-out-left=0" in obs[4]'
gone=0
for _ in $(seq 600); do no_process_with "sleep 300.$BG_MARK" && { gone=1; break; }; sleep 0.1; done
check "background: the jobs end with the cell" [ "$gone" = 1 ]
check "background: no cell is left behind" no_cells_left

# --- invalid UTF-8 from an Anthropic-format server ---
AGENT_API=anthropic agent utf8 hostile_utf8 -q "p"
check "invalid UTF-8: the episode submits" expect_rc 0
qtrue "invalid UTF-8: every later request body was valid JSON" \
	'len(log) == 3 and all(r["body"] is not None for r in log)'
check "invalid UTF-8: the records are valid UTF-8 JSON" /usr/bin/python3 -c '
import json, sys
for p in sys.argv[1:]:
    with open(p, encoding="utf-8") as f:
        text = f.read()
    [json.loads(l) for l in text.splitlines() if l.strip()] if p.endswith(".jsonl") else json.loads(text)
' "$RUN/events.jsonl" "$RUN/trajectory.json" "$RUN/conversation.json"
qtrue "invalid UTF-8: the bytes became replacement characters" \
	'"bad bytes \ufffd\ufffd here" in t["steps"][0]["thought"] or "\ufffd\ufffd" in json.dumps(t, ensure_ascii=False)'

# --- more than 64 tool calls in one reply ---
agent many hostile_many_calls -q "p"
check "70 tool calls: the episode goes on and submits" expect_rc 0
check "70 tool calls: the first 64 ran" out_is 64
qtrue "70 tool calls: the model is told the rest were dropped" \
	'any("only the first 64 were run" in json.dumps(r["body"]) for r in log[1:2])'

# --- arguments over 4 MiB ---
agent bigargs hostile_big_args -q "p"
check "4.5 MB of arguments: the episode goes on" expect_rc 0
qtrue "4.5 MB of arguments: reported as too large, not as bad JSON" \
	'"MiB a tool call may carry" in obs[0] and "not valid JSON" not in obs[0]'

# --- a redirect ---
agent redirect hostile_redirect -q "p"
check "307: the run fails" bash -c '[ "$0" -ne 0 ]' "$RC"
check "307: the message names the Location and says what to do" \
	bash -c 'grep -q "127.0.0.1:9/moved" <<<"$0" && grep -q -- "--base-url" <<<"$0"' "$ERR"

# --- escape sequences in model commands, paths and answers ---
agent terminal hostile_terminal "p"
check "escapes: the episode submits" expect_rc 0
check "escapes: the progress lines show the command" err_has 'red'
printf '%s' "$ERR" >"$T_DIR/terminal-err"
check "escapes: no ESC, BEL, DEL or C1 character reaches the terminal (stderr)" /usr/bin/python3 -c '
import re, sys
b = open(sys.argv[1], "rb").read()
sys.exit(1 if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b) else 0)' "$T_DIR/terminal-err"
check "escapes: they are shown as \\x1b" err_has '\\x1b\[2J'

# --- an answer over 4 MiB, and output over --files-limit ---
agent biganswer hostile_big_answer -q --json --files-limit 100000 "p"
check "big answer: says the answer was too large and not kept" err_has 'answer.txt.*4 MiB'
check "files limit: says what was left out" err_has 'files-limit'
printf '%s' "$OUT" >"$T_DIR/biganswer.json"
check "big answer: --json says so in answer_error (the status stays submitted)" /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["status"] == "submitted" and j["answer"] is None, j
assert "larger than 4 MiB" in j["answer_error"] and "not read" in j["answer_error"], j' "$T_DIR/biganswer.json"
check "files limit: --json has files_truncated and a note saying what to do" /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["files_truncated"] is True and "--files-limit" in j["files_note"], j' "$T_DIR/biganswer.json"

check "no cell is left behind" no_cells_left
finish
