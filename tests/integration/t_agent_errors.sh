#!/usr/bin/env bash
# sandcell agent: a model server that misbehaves — rate limits, server
# errors, no server at all, bodies that are not what they should be — and
# a model that sends arguments that are not JSON.
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

# --- 429 with Retry-After, then success ---
agent r429 retry_429 -q --retry-base-ms 10 "rate limited"
check "429: retried and submitted" expect_rc 0
check "429: answer printed" out_is after-429
qtrue "429: the failed attempt is in events.jsonl with its status and Retry-After" \
	'any(e["type"] == "response" and e.get("status") == 429 and e.get("retry_after_s") == 1 and "slow down" in e["error"] for e in ev)'
qtrue "429: the retry waited for Retry-After (1 s), not the 10 ms backoff" \
	'log[1]["t_recv"] - log[0]["t_sent"] >= 0.9'
qtrue "429: the same request was sent again" 'log[0]["body"] == log[1]["body"]'

# --- two 5xx, then success ---
agent r500 retry_500 -q --retry-base-ms 10 "server errors"
check "5xx: retried and submitted" expect_rc 0
check "5xx: answer printed" out_is after-500s
qtrue "5xx: both failures recorded with their status" \
	'[e.get("status") for e in ev if e["type"] == "response"][:3] == [500, 503, 200]'
qtrue "5xx: the server's message (or an excerpt of a non-JSON body) is kept" \
	'"internal error one" in [e for e in ev if e["type"] == "response"][0]["error"] and "Service Unavailable" in [e for e in ev if e["type"] == "response"][1]["error"]'

# --- connection refused until the attempts run out ---
# a port that nothing listens on: bound (so nobody else can take it) but
# not listening, held by a helper until the case is done
pf="$T_DIR/closed-port"
python3 -S -c 'import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0))
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1]); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)' "$pf" </dev/null >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1200); do [ -s "$pf" ] && break; sleep 0.05; done
port=$(cat "$pf")
RUN="$T_WORK/refused"
FAKE_LOG=/dev/null
sc agent --base-url "http://127.0.0.1:$port/v1" --model m --out "$RUN" -q \
	--max-attempts 3 --retry-base-ms 10 "nobody listens"
check "refused: exit status 1 (error)" expect_rc 1
check "refused: one line on stderr that says what failed" \
	bash -c '[ "$(grep -c . <<<"$0")" -eq 1 ] && grep -q "after 3 attempts" <<<"$0" && grep -qi "connect" <<<"$0"' "$ERR"
qtrue "refused: status error with the reason in the trajectory" \
	't["status"] == "error" and "after 3 attempts" in t["error"]'
qtrue "refused: three attempts in events.jsonl" \
	'[e["attempt"] for e in ev if e["type"] == "request"] == [1, 2, 3]'
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check "refused: no cell is left behind" no_cells_left

# --- a 4xx other than 429 is fatal at once, with the server's message ---
agent r401 fatal_401 -q --retry-base-ms 10 "bad key"
check "401: exit status 1" expect_rc 1
check "401: the server's message is shown" err_has "HTTP 401: Incorrect API key provided"
qtrue "401: not retried" 'len(log) == 1 and t["status"] == "error"'

# --- bodies that are not a reply ---
agent malformed malformed -q "garbage"
check "malformed body: exit status 1" expect_rc 1
check "malformed body: says it is not valid JSON and shows it" \
	bash -c 'grep -q "not valid JSON" <<<"$0" && grep -q "this is not JSON" <<<"$0"' "$ERR"
qtrue "malformed body: recorded in the trajectory" 't["status"] == "error" and "not valid JSON" in t["error"]'

agent nochoices no_choices -q "empty"
check "no choices: exit status 1" expect_rc 1
check "no choices: says so" err_has "no choices"

# --- tool arguments that are not JSON go back to the model ---
agent badargs bad_args -q "bad arguments"
check "bad arguments: the episode goes on and submits" expect_rc 0
check "bad arguments: answer printed" out_is recovered
qtrue "bad arguments: the observation names the problem and echoes them" \
	'"not valid JSON" in obs[0] and "echo unterminated" in obs[0] and t["steps"][0]["action"]["function"] == "execute_bash"'
qtrue "bad arguments: nothing ran for that call" \
	'[e for e in ev if e["type"] == "tool_result"][0]["is_error"] is True'

# --- a request that times out is retried ---
agent rtimeout request_timeout -q --request-timeout 5 --retry-base-ms 10 "slow server"
check "request timeout: retried and submitted" expect_rc 0
check "request timeout: the late reply was not used" out_is on-time
qtrue "request timeout: the timed-out attempt is recorded" \
	'any(e["type"] == "response" and "timed out" in e["error"] for e in ev)'

# --- SIGTERM ends the episode after the step in flight ---
start_fake "$SCENARIOS/interrupt.json"
RUN="$T_WORK/interrupt"
pidfile="$T_WORK/agent.pid"
as_user sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$SC_BIN" agent -q \
	--base-url "http://127.0.0.1:$FAKE_PORT/v1" --model m --out "$RUN" "interrupt me" \
	>"$T_DIR/int.out" 2>"$T_DIR/int.err" </dev/null &
bg=$!
# once the first reply is in (its response event; the step it asks for
# lasts 10 s), not when the fake logs the request: it logs before it replies
for _ in $(seq 1200); do grep -Eqs '"type": *"response"' "$RUN/events.jsonl" && break; sleep 0.05; done
kill -TERM "$(cat "$pidfile")"
wait "$bg"
RC=$? OUT=$(cat "$T_DIR/int.out") ERR=$(cat "$T_DIR/int.err")
stop_fake
check "SIGTERM: exit status 1" expect_rc 1
check "SIGTERM: says it was interrupted" err_has "interrupted"
qtrue "SIGTERM: status error, recorded" 't["status"] == "error" and "interrupted" in t["error"] and ev[-1]["type"] == "episode_end"'
qtrue "SIGTERM: the step in flight finished and no new one started" 'len(log) == 1 and len(t["steps"]) == 1'
check "SIGTERM: the answer so far is still collected" out_is partial

check "no cell is left behind" no_cells_left
finish
