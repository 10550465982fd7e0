#!/usr/bin/env bash
# Nothing is left on the host: after a normal run, a timeout, and SIGKILL of
# sandcell itself mid-run (of the parent only: the cell's init has the same
# host command line, so a match by command line would kill it too).
#
# No mount check: a cell's mounts live in its own mount namespace and never
# appear in the host's table, so a check there could not fail. A cell that
# outlives its run keeps its namespace alive through its processes, which
# the checks below look for.
. "$(dirname "$0")/../lib.sh"

# wait_until CMD...: until CMD succeeds (at most ~60 s), then its status.

marker="sleep 4242.$$"
sc run --timeout 1 -- sh -c "$marker & $marker & wait"
check "timeout gives 124" expect_rc 124
wait_until no_process_with "$marker"
check "no process left after the timeout" no_process_with "$marker"

# SIGKILL of the parent: its init (its one child) and the command must die.
# (Counted with functions, not `bash -c`, whose own argv would match.)
count_with() { pgrep -c -f -- "$1" || true; }
running() { [ -n "$INIT" ] && [ "$(count_with "$1")" -ge 3 ]; }
all_gone() { no_process_with "$1" && [ ! -d "/proc/$INIT" ]; }
kill_parent_case() {
	local what=$1 marker=$2
	shift 2
	as_user_exec "$SC_BIN" "$@" </dev/null >/dev/null 2>&1 &
	local runner=$!
	INIT=""
	wait_until eval '[ "$(count_with "$marker")" -ge 3 ]'
	INIT=$(pgrep -P "$runner" | head -1)
	check "$what: the cell's init ($INIT) and command were running" running "$marker"
	kill -KILL "$runner"
	wait "$runner" 2>/dev/null
	wait_until all_gone "$marker"
	check "$what: no process left after SIGKILL of sandcell's parent only" all_gone "$marker"
	pkill -KILL -f -- "$marker" 2>/dev/null || true
}

marker2="sleep 4343.$$"
kill_parent_case "run" "$marker2" run -- sh -c "$marker2 & exec $marker2"
marker3="sleep 4444.$$"
kill_parent_case "run with limits (a cgroup or rlimits)" "$marker3" \
	run --pids 64 --memory 256M -- sh -c "$marker3 & exec $marker3"
# SIGKILL of an agent mid-episode (waiting on its model): its cell, made
# for the episode, dies with it (a --keep cell is meant to outlive it).
if command -v python3 >/dev/null; then
	pf="$T_DIR/fake.port"
	python3 -S "$SRCDIR/tests/fakes/fake_llm.py" --scenario "$SRCDIR/tests/fakes/scenarios/solve.json" \
		--delay 60 --port-file "$pf" --idle-exit 120 </dev/null >/dev/null 2>&1 &
	fake=$!
	for _ in $(seq 1200); do [ -s "$pf" ] && break; sleep 0.05; done
	marker4="agent-leftover-$$"
	T_EXTRA_ENV="OPENAI_API_KEY=x" as_user_exec "$SC_BIN" agent --base-url "http://127.0.0.1:$(cat "$pf")/v1" \
		--model m --out "$T_WORK/agent-run" -q "$marker4" </dev/null >/dev/null 2>&1 &
	agent=$!
	# until the cell is up: the agent's init is its child, with its command line
	agent_cell_up() { [ -n "$(pgrep -P "$agent" -f -- "$marker4")" ]; }
	wait_until agent_cell_up
	check "agent: its cell's init is running" agent_cell_up
	kill -KILL "$agent"
	wait "$agent" 2>/dev/null
	wait_until no_process_with "$marker4"
	check "agent: no process of its cell is left after SIGKILL of the agent" no_process_with "$marker4"
	kill "$fake" 2>/dev/null
	wait "$fake" 2>/dev/null
	sc gc
	sc ps
	check "agent: its cell's state is gone after gc" bash -c '[ "$0" -eq 0 ] && ! grep -q "^agent-" <<<"$1"' "$RC" "$OUT"
	pkill -KILL -f -- "$marker4" 2>/dev/null || true
fi
check "no state directory left behind" bash -c '[ ! -d "$SANDCELL_ROOT/run" ] || [ -z "$(ls -A "$SANDCELL_ROOT/run")" ]'

finish
