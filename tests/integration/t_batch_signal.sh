#!/usr/bin/env bash
# sandcell batch and the signals a user sends: the first SIGINT lets the
# running episodes end (no result for them, a summary, exit 130) and a rerun
# finishes the run; a second one stops at once (exit 130) and the pool's
# processes still remove every cell.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

W=$T_WORK
write_rules "$W/rules.json"
for i in $(seq -w 1 12); do
	printf '{"id": "s%s", "problem": "say <<%d>>", "answer": "%d"}\n' "$i" "$((10#$i * 3))" "$((10#$i * 3))"
done >"$W/tasks.jsonl"
give_to_user

lines_of() { if [ -f "$1" ]; then grep -c '' "$1"; else echo 0; fi; }
wait_lines() { # FILE N: until FILE has N lines (at most 60 s)
	for _ in $(seq 600); do
		[ "$(lines_of "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# the sandcell process of a background as_user (which runs in a subshell
# that ignores SIGINT, as every asynchronous command of a script does)
sandcell_pid() {
	local c
	for _ in $(seq 1200); do
		c=$(pgrep -P "$1" | head -n 1)
		[ -n "$c" ] && { echo "$c"; return 0; }
		[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$SC_BIN")" ] && { echo "$1"; return 0; }
		sleep 0.05
	done
	echo "$1"
}
cells_gone() { # the pool's workers remove the cells (waits up to 60 s)
	for _ in $(seq 600); do
		sc ps
		[ "$(printf '%s\n' "$OUT" | grep -vc '^NAME')" -eq 0 ] && return 0
		sleep 0.1
	done
	return 1
}

start_conv "$W/rules.json" --delay 0.3

# ---- one SIGINT: finish the running episodes, then stop ----
RUN="$W/once"
as_user "$SC_BIN" batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 2 >"$W/1.out" 2>"$W/1.err" </dev/null &
pid=$!
BG_PIDS="$pid"
wait_lines "$RUN/results.jsonl" 1
kill -INT "$(sandcell_pid "$pid")"
wait "$pid"
RC=$?
ERR=$(cat "$W/1.err")
OUT=$(cat "$W/1.out")
check "SIGINT: exit status 130" expect_rc 130
check "SIGINT: says it waits for the running episodes" err_has "sandcell: batch: stopping: waiting for the running episodes (signal again to stop at once)"
check "SIGINT: the summary is still printed" out_has "(12 expected, "
before=$(lines_of "$RUN/results.jsonl")
check "SIGINT: attempts were left to run ($before of 12 done)" test "$before" -lt 12
rtrue "SIGINT: every recorded attempt is complete and none is an error" "$RUN" \
	"partial == '' and all(r['status'] == 'submitted' for r in res)"
check "SIGINT: no cell is left" cells_gone
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$RUN" \
	--concurrency 2 -q
check "the rerun exits 0" expect_rc 0
rtrue "the rerun completes the run: 12 attempts, each once" "$RUN" \
	"len(res) == 12 and len(by) == 12 and all(r['score'] == 1 for r in res)"

# ---- two SIGINTs: stop at once ----
# slower model answers: the episodes still run when the second SIGINT comes
stop_conv
start_conv "$W/rules.json" --delay 2
RUN="$W/twice"
as_user "$SC_BIN" batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --concurrency 2 >"$W/2.out" 2>"$W/2.err" </dev/null &
pid=$!
BG_PIDS="$pid"
# at the model's first request: each running episode has two more answers
# (4 s) to wait for, time enough for both SIGINTs on a slow machine
wait_lines "$FAKE_LOG" 1
spid=$(sandcell_pid "$pid")
kill -INT "$spid"
for _ in $(seq 1200); do
	grep -q "stopping:" "$W/2.err" && break
	sleep 0.05
done
kill -INT "$spid"
wait "$pid"
RC=$?
ERR=$(cat "$W/2.err")
check "second SIGINT: exit status 130" expect_rc 130
check "second SIGINT: says it stopped at once" err_has "sandcell: batch: stopped at once; rerun the same command to finish"
check "second SIGINT: no cell is left" cells_gone

stop_conv
finish
