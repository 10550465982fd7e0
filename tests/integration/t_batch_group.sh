#!/usr/bin/env bash
# sandcell batch --group-size: a task's setup runs once per group and the
# group's attempts run in forks of the set-up cell, isolated from each
# other; a failing setup fails its whole group with the reason; results
# and the summary carry the setup time once per group; a SIGKILL mid-run
# and a rerun complete the run without redoing finished attempts, and
# nothing is left behind.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

W=$T_WORK
# "GROUP" attempts append to a file the setup made, wait, count its lines
# (2 when no other attempt's line is there) and answer with the setup's data
cat >"$W/rules.json" <<'JSON'
{"rules": [
 {"match": "GROUP <<(.*?)>>", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo attempt-$$ >> /testbed/shared.txt; sleep 0.5; wc -l < /testbed/shared.txt > /testbed/output/lines.txt; cat /testbed/setup/data.txt > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "say <<(.*?)>>", "responses": [
   {"tool_calls": [{"name": "str_replace_editor", "arguments": {"command": "create", "path": "/testbed/answer.txt", "file_text": "{{1}}"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
# each setup appends a line to a host file (bound in at /host): one line
# per setup that ran
cat >"$W/tasks.jsonl" <<'JSONL'
{"id": "g1", "problem": "GROUP <<g1>>", "answer": "data-g1", "setup": {"command": "echo ran >> /host/count.g1; sleep 1; echo base > /testbed/shared.txt", "files": {"setup/data.txt": "data-g1"}}}
{"id": "g2", "problem": "GROUP <<g2>>", "answer": "data-g2", "setup": "echo ran >> /host/count.g2; mkdir -p setup; echo data-g2 > setup/data.txt; echo base > shared.txt"}
{"id": "bad", "problem": "GROUP <<bad>>", "answer": "x", "setup": {"command": "echo installing; echo 'pip: no such package' >&2; exit 3"}}
{"id": "plain", "problem": "say <<7>>", "answer": "7"}
JSONL
mkdir -p "$W/host" "$W/host2"
chmod 777 "$W/host" "$W/host2"
give_to_user

lines_of() { if [ -f "$1" ]; then grep -c '' "$1"; else echo 0; fi; }
# prints what is left under the state root (cells, snapshots); true if any
state_left() { { find "$SANDCELL_ROOT/run" -mindepth 1 -maxdepth 2 ! -name '.snapshots' 2>/dev/null
	find "$SANDCELL_ROOT/run/.snapshots" -mindepth 1 -maxdepth 1 2>/dev/null; } | grep . && find "$SANDCELL_ROOT/run/.snapshots" -maxdepth 3; }

start_conv "$W/rules.json"
RUN="$W/run"
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$RUN" \
	--group-size 3 --concurrency 4 -v "$W/host:/host"
check "a run whose one setup fails exits 1" expect_rc 1
rtrue "--group-size 3 means 3 attempts of each of the 4 tasks" "$RUN" \
	"len(res) == 12 and len(by) == 12 and partial == ''"
check "g1's setup ran once for its group of 3" test "$(lines_of "$W/host/count.g1")" -eq 1
check "g2's setup ran once for its group of 3" test "$(lines_of "$W/host/count.g2")" -eq 1
rtrue "every grouped attempt saw its setup's files (answered with their data)" "$RUN" \
	"all(by[(t, k)]['status'] == 'submitted' and by[(t, k)]['score'] == 1 for t in ('g1', 'g2') for k in range(3))"
iso=$(cat "$RUN"/attempts/g[12]/*/files/lines.txt 2>/dev/null | tr -d ' ' | sort | uniq -c | tr -s ' ')
check "attempts of a group are isolated: each saw the setup's line and its own only ($iso)" \
	test "$iso" = " 6 2"
rtrue "results carry the group, its size, one setup run and its time" "$RUN" \
	"all(by[(t, k)]['group'] == 0 and by[(t, k)]['group_size'] == 3 for t in ('g1', 'g2', 'bad') for k in range(3)) and all(len({by[(t, k)]['setup_run'] for k in range(3)}) == 1 for t in ('g1', 'g2', 'bad'))"
rtrue "g1's setup time (it sleeps 1 s) is in setup_s, not in the attempts' wall_s" "$RUN" \
	"all(by[('g1', k)]['setup_s'] >= 1 and by[('g1', k)]['wall_s'] < by[('g1', k)]['setup_s'] + 30 for k in range(3))"
rtrue "a failed setup fails every attempt of its group, with the reason" "$RUN" \
	"all(by[('bad', k)]['status'] == 'error' and 'setup command exited 3' in by[('bad', k)]['error'] and 'no such package' in by[('bad', k)]['error'] for k in range(3))"
check "the failed setup's output is kept in its log" grep -q 'no such package' "$RUN/attempts/bad/setup-0.log"
rtrue "a task without a setup runs as before (no group)" "$RUN" \
	"all(by[('plain', k)]['status'] == 'submitted' and 'group' not in by[('plain', k)] for k in range(3))"
check "the summary has a setup line" out_has "setup    3 setups for 9 attempts in groups"
sc batch summarize --json "$RUN"
check "summarize --json counts each setup once" \
	bash -c '[ "$(jget "[d[\"setups\"], d[\"grouped_attempts\"], d[\"setup_s\"] >= 1]")" = "[3, 9, true]" ]'
sc batch report -o "$W/report.html" "$RUN"
check "the report has the setups once per group and each attempt's group" \
	bash -c 'grep -q "\"setups\":3" "$0" && grep -q "\"setup_run\":" "$0" && grep -q "once per group" "$0"' "$W/report.html"
check "no cell is left" no_cells
check "nothing is left under the state root (cells, snapshots)" bash -c "$(declare -f state_left); ! state_left"
sc gc
check "gc finds nothing to remove" bash -c '[ "$RC" -eq 0 ]'
stop_conv

# ---- SIGKILL mid-run, then a rerun ----
for i in 1 2 3 4; do
	printf '{"id": "k%s", "problem": "GROUP <<k%s>>", "answer": "data-k%s", "setup": {"command": "echo ran >> /host/count.k%s; echo base > shared.txt", "files": {"setup/data.txt": "data-k%s"}}}\n' \
		"$i" "$i" "$i" "$i" "$i"
done >"$W/kill.jsonl"
give_to_user
start_conv "$W/rules.json" --delay 0.2
RUN="$W/killed"
as_user_exec "$SC_BIN" batch "$W/kill.jsonl" --base-url "$FAKE_URL" --model fake-model \
	--out "$RUN" --group-size 3 --repeat 6 --concurrency 3 -v "$W/host2:/host" -q \
	>"$W/k1.out" 2>"$W/k1.err" </dev/null &
pid=$!
BG_PIDS="$pid"
WAIT_S=60 wait_until bash -c "[ \"\$(cat '$RUN/results.jsonl' 2>/dev/null | grep -c '')\" -ge 4 ]"
kill -9 "$pid"
wait "$pid" 2>/dev/null
before=$(wc -l <"$RUN/results.jsonl")
head -n "$before" "$RUN/results.jsonl" >"$W/before-kill.jsonl"
check "the batch was killed with attempts still to run ($before of 24 done)" test "$before" -lt 24
check "the killed batch's cells are gone (its helpers remove them)" wait_until no_cells
check "no process of the killed batch is left" wait_until no_process_with "--out $RUN "
stop_conv
start_conv "$W/rules.json"
sc batch "$W/kill.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$RUN" \
	--group-size 3 --repeat 6 --concurrency 3 -v "$W/host2:/host" -q
check "the rerun exits 0" expect_rc 0
[ "$RC" -eq 0 ] || grep '"status": *"error"' "$RUN/results.jsonl" | head -n 3
rtrue "exactly one result per attempt after kill + rerun: 24" "$RUN" \
	"len(res) == 24 and len(by) == 24 and partial == ''"
rtrue "every attempt saw its setup's files" "$RUN" \
	"all(r['status'] == 'submitted' and r['score'] == 1 for r in res)"
check "the attempts recorded before the kill were kept and not run again" \
	bash -c '[ "$(grep -cxFf "$0" "$1")" -eq "$2" ]' "$W/before-kill.jsonl" "$RUN/results.jsonl" "$before"
# the rerun sent requests only for the attempts it ran (two each)
check "the rerun ran only the attempts without a result" \
	test "$(lines_of "$FAKE_LOG")" -le $(((24 - before) * 2))
# a group finished before the kill did not run its setup again; one cut
# short ran it once more for the rest
rtrue "each (task, group) was set up at most twice (once more only when cut short)" "$RUN" \
	"all(len({r['setup_run'] for r in res if (r['id'], r['group']) == key}) <= 2 for key in {(r['id'], r['group']) for r in res})"
setups=$(cat "$W"/host2/count.k* | grep -c ran)
check "setups ran at most twice per group of 3 ($setups for 8 groups)" test "$setups" -ge 8 -a "$setups" -le 16
check "no cell is left" no_cells
check "nothing is left under the state root" bash -c "$(declare -f state_left); ! state_left"
stop_conv

finish
