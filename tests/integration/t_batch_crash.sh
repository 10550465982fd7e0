#!/usr/bin/env bash
# sandcell batch survives its failures: SIGKILL mid-batch and a rerun give
# exactly one result per attempt and leave no cell; the LLM server going
# away mid-run marks attempts as errors and --retry-errors completes them.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

W=$T_WORK
write_rules "$W/rules.json"
for i in $(seq -w 1 12); do
	printf '{"id": "t%s", "problem": "say <<%d>>", "answer": "%d"}\n' "$i" "$((10#$i * 7))" "$((10#$i * 7))"
done >"$W/tasks.jsonl"
give_to_user

lines_of() { if [ -f "$1" ]; then grep -c '' "$1"; else echo 0; fi; }

# wait_lines FILE N: until FILE has N lines (at most 60 s)
wait_lines() {
	for _ in $(seq 600); do
		[ "$(lines_of "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- SIGKILL at a moment when episodes are in flight ----
start_conv "$W/rules.json" --delay 0.2
RUN="$W/killed"
as_user_exec "$SC_BIN" batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 4 --repeat 2 -q >"$W/k1.out" 2>"$W/k1.err" </dev/null &
pid=$!
BG_PIDS="$pid"
wait_lines "$RUN/results.jsonl" 5
kill -9 "$pid"
wait "$pid" 2>/dev/null
# complete lines only (a write cut short by the kill is dropped by the rerun)
before=$(wc -l <"$RUN/results.jsonl")
head -n "$before" "$RUN/results.jsonl" >"$W/before-kill.jsonl"
RC=0
check "the batch was killed with attempts still to run ($before of 24 done)" test "$before" -lt 24
# the pool's workers see their owner die and remove its cells
for _ in $(seq 600); do
	sc ps
	[ "$(printf '%s\n' "$OUT" | grep -vc '^NAME')" -eq 0 ] && break
	sleep 0.1
done
check "the killed batch's cells are gone" no_cells
# its pool workers and its cells' inits carry its command line (--out)
for _ in $(seq 600); do no_process_with "--out $RUN " && break; sleep 0.1; done
check "no process of the killed batch is left (pool workers, cells' inits)" no_process_with "--out $RUN "
# a fresh server (and log) for the rerun: a request the killed batch sent
# just before it died may still be answered and logged by the old one
stop_conv
start_conv "$W/rules.json" --delay 0.2
requests_before_rerun=$(lines_of "$FAKE_LOG")
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$RUN" \
	--concurrency 4 --repeat 2 -q
check "the rerun exits 0" expect_rc 0
rerun_requests=$(($(lines_of "$FAKE_LOG") - requests_before_rerun))
rtrue "exactly one result per attempt after kill + rerun: 24 lines, 24 attempts" "$RUN" \
	"len(res) == 24 and len(by) == 24 and partial == ''"
rtrue "every attempt was submitted and scored 1" "$RUN" \
	"all(r['status'] == 'submitted' and r['score'] == 1 for r in res)"
# (each attempt is three requests: the rerun makes them for the attempts
# still to run, and keeps the lines recorded before the kill as they were)
check "the attempts recorded before the kill were not run again ($rerun_requests requests for $((24 - before)) attempts)" \
	bash -c '[ "$0" -le $(( (24 - $1) * 3 )) ] && grep -qxFf "$2" "$3" && [ "$(grep -cxFf "$2" "$3")" -eq "$1" ]' \
	"$rerun_requests" "$before" "$W/before-kill.jsonl" "$RUN/results.jsonl"
check "no cell is left" no_cells
sc gc
check "gc finds nothing to remove" bash -c '[ "$RC" -eq 0 ]'

# A crash in the middle of a write: a final line without its newline is
# not a result; the rerun drops it and runs that attempt again.
printf '{"id": "t01", "repeat": 5, "status": "submi' >>"$RUN/results.jsonl"
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$RUN" \
	--concurrency 4 --repeat 2
check "a partial last line is reported and dropped" err_has 'dropped a partial last line'
rtrue "still exactly one line per attempt, file ends with a newline" "$RUN" \
	"len(res) == 24 and len(by) == 24 and partial == ''"
stop_conv

# ---- the LLM server goes away mid-run ----
start_conv "$W/rules.json" --delay 0.3
RUN="$W/gone"
as_user "$SC_BIN" batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 2 --max-attempts 1 -q >"$W/g1.out" 2>"$W/g1.err" </dev/null &
pid=$!
BG_PIDS="$pid"
wait_lines "$RUN/results.jsonl" 2
stop_conv
wait "$pid"
RC=$?
check "a batch whose model server went away exits 1" expect_rc 1
rtrue "every attempt has a result; the ones after the server left are errors" "$RUN" \
	"len(res) == 12 and len(by) == 12 and any(r['status'] == 'error' for r in res) and all(r['error'] for r in res if r['status'] == 'error')"
rtrue "errors say the server cannot be reached" "$RUN" \
	"any('connect' in r['error'] or 'connection' in r['error'] for r in res if r['error'])"
errors=$(rq "$RUN" "sum(r['status'] == 'error' for r in res)")
# the server comes back (on a port of its own choosing: the old one may
# be taken by now)
start_conv "$W/rules.json"
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 2
check "a rerun without --retry-errors leaves the errors (exit 1)" bash -c '[ "$RC" -eq 1 ] && printf "%s" "$ERR" | grep -q "0 to run"'
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 2 --retry-errors
check "--retry-errors completes them (exit 0)" expect_rc 0
check "--retry-errors says how many it retries" err_has "retrying $errors attempts"
rtrue "12 results, one per attempt, none in error" "$RUN" \
	"len(res) == 12 and len(by) == 12 and all(r['status'] == 'submitted' and r['score'] == 1 for r in res)"
check "the superseded error lines are kept in superseded.jsonl" \
	test "$(lines_of "$RUN/superseded.jsonl")" -eq "$errors"
check "no cell is left" no_cells

finish
