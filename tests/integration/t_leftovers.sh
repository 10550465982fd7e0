#!/usr/bin/env bash
# Nothing is left on the host: after a normal run, a timeout, and SIGKILL of
# sandcell itself mid-run.
. "$(dirname "$0")/../lib.sh"

# Mounts of this test's cells, were any to leak onto the host, would name
# its directories or be overlays (other tests may mount things meanwhile).
leaked_mounts() { grep -E -- "$T_DIR| overlay " /proc/self/mountinfo | grep -vxF -f "$T_DIR/mounts.before"; }
no_leaked_mounts() { [ -z "$(leaked_mounts)" ]; }
grep -E -- "$T_DIR| overlay " /proc/self/mountinfo >"$T_DIR/mounts.before" || true
marker="sleep 4242.$$"

sc run --timeout 1 -- sh -c "$marker & $marker & wait"
check "timeout gives 124" expect_rc 124
sleep 0.3
check "no process left after the timeout" no_process_with "$marker"

marker2="sleep 4343.$$"
as_user "$SC_BIN" run -- sh -c "$marker2 & $marker2 & wait" </dev/null >/dev/null 2>&1 &
runner=$!
for _ in $(seq 50); do pgrep -f -- "$marker2" >/dev/null && break; sleep 0.1; done
check "the cell's processes were running" has_process_with "$marker2"
pkill -KILL -f "^$SC_BIN run" || kill -KILL "$runner"
wait "$runner" 2>/dev/null
for _ in $(seq 50); do no_process_with "$marker2" && break; sleep 0.1; done
check "no process left after SIGKILL of sandcell" no_process_with "$marker2"
check "no mount left on the host" no_leaked_mounts
check "no state directory left behind" bash -c '[ ! -d "$SANDCELL_ROOT/run" ] || [ -z "$(ls -A "$SANDCELL_ROOT/run")" ]'

finish
