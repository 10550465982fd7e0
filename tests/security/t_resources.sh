#!/usr/bin/env bash
# Security suite: resources, inherited fds, host processes, setuid, under
# the `default` policy. Without cgroups for the caller (rootless on a hybrid
# host) --pids and --memory fall back to RLIMIT_NPROC and RLIMIT_AS; with
# them (cgroup v2, or v1 for root on v1/hybrid hosts: doctor --json says
# which) the memory bomb meets the OOM killer instead. cgroup limits have
# their own tests (t_cgroup_v1, tests/vm).
#
# Cases (attacks/res.c):
#   forkbomb   every process forks forever, --pids 64 --timeout 10
#              host: sandcell returns 124, no bomb process is left, the host
#              could start processes while the bomb ran
#   membomb    allocate and touch memory until it fails, --memory 256M
#              host: it ends, no process is left, MemAvailable is back
#   fds        the host opened fds 3 (a file, for writing), 5 (a directory)
#              and 9 before starting sandcell; the cell sees only 0-2
#              host: the file is unchanged
#   kill       kill/pidfd_send_signal/kill(-pgrp) of a host process by pid,
#              kill(-1); host: that process is still alive
#   setuid     a setuid-root copy made in the cell, run (after trying to
#              become uid 1000) gains no capability; host setuid binaries are
#              owned by an unmapped user; no_new_privs is set
#              host: /etc/passwd and /etc/shadow unchanged
#   orphan     a double-forked daemon that ignores signals and starts a new
#              session does not outlive the cell
. "$(dirname "$0")/../lib.sh"

build_attacks res

# --- fork bomb ---
marker="sc-forkbomb-$$-$RANDOM"
bomb_out="$T_DIR/bomb.out"
: >"$bomb_out"
chmod 666 "$bomb_out"
# (--cpus 1: the bomb retries fork every millisecond, and the tests that
# ctest runs beside this one need the other core)
as_user "$SC_BIN" run --policy default --pids 64 --cpus 1 --timeout 20 -v "$ATTACKS:/attacks:ro" \
	-- /attacks/res forkbomb 64 "$marker" </dev/null >"$bomb_out" 2>&1 &
bomb=$!
for _ in $(seq 200); do grep -qE '^(BLOCKED|ESCAPED): fork bomb' "$bomb_out" && break; sleep 0.1; done
# The bomb is at its limit now: the host (and the same user) can still start processes.
host_forks=0
for _ in 1 2 3 4 5; do as_user true && host_forks=$((host_forks + 1)); done
wait "$bomb"
RC=$? OUT=$(cat "$bomb_out") ERR=""
show_attack
check "forkbomb: the bomb was stopped at the process limit" out_has '^BLOCKED: fork bomb'
check "forkbomb: it never exceeded the limit" bash -c '! grep -q "^ESCAPED" <<<"$0"' "$OUT"
check "forkbomb: --timeout ended it (124)" expect_rc 124
check "forkbomb: the host could start processes meanwhile" [ "$host_forks" -eq 5 ]
for _ in $(seq 600); do no_process_with "$marker" && break; sleep 0.1; done
check "forkbomb: no bomb process is left on the host" no_process_with "$marker"

# --- fork bomb under default options (no --pids): the default pids limit
# (1024) holds it, --timeout ends it, and a host-side probe keeps forking ---
marker="sc-dforkbomb-$$-$RANDOM"
bomb_out="$T_DIR/dbomb.out"
: >"$bomb_out"
chmod 666 "$bomb_out"
# (a generous timeout: on a loaded machine 1024 forks can take many seconds)
as_user "$SC_BIN" run --cpus 1 --timeout 60 -v "$ATTACKS:/attacks:ro" \
	-- /attacks/res forkbomb 1024 "$marker" </dev/null >"$bomb_out" 2>&1 &
bomb=$!
for _ in $(seq 700); do grep -qE '^(BLOCKED|ESCAPED): fork bomb' "$bomb_out" && break; sleep 0.1; done
probe_forks=0
for _ in $(seq 20); do /bin/true && probe_forks=$((probe_forks + 1)); done
wait "$bomb"
RC=$? OUT=$(cat "$bomb_out") ERR=""
show_attack
check "default forkbomb: held at the default 1024 processes" out_has '^BLOCKED: fork bomb'
check "default forkbomb: it never exceeded the default" bash -c '! grep -q "^ESCAPED" <<<"$0"' "$OUT"
check "default forkbomb: --timeout ended it (124)" expect_rc 124
check "default forkbomb: the host-side probe completed its 20 forks" [ "$probe_forks" -eq 20 ]
for _ in $(seq 600); do no_process_with "$marker" && break; sleep 0.1; done
check "default forkbomb: no bomb process is left on the host" no_process_with "$marker"

# --pids 0 lifts the default: the cell may start more than 1024 processes
# (a bounded count here, not a bomb)
# (children that wait forever, so they are all alive at once however slowly
# they start; a failed fork ends the count; the cell's end kills them)
FORK_1100='import os, signal
n = 0
for _ in range(1100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    n += 1
print("started", n, flush=True)'
sc run --pids 0 --timeout 300 -- /usr/bin/python3 -c "$FORK_1100"
check "--pids 0: more than the default 1024 processes start" out_has '^started 1100'
sc run --timeout 300 -- /usr/bin/python3 -c "$FORK_1100"
check "default pids: 1100 processes do not all start (the count stops below)" \
	bash -c 'n=$(sed -n "s/^started //p" <<<"$0"); [ -n "$n" ] && [ "$n" -lt 1100 ]' "$OUT"
check "default pids: a fork was refused (not the timeout)" bash -c '[ "$0" -ne 124 ]' "$RC"

# --- memory bomb ---
mem_available() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
mem_before=$(mem_available)
marker="sc-membomb-$$-$RANDOM"
# Which mechanism holds --memory for this caller here, as doctor --json says
# (cgroup-v2, cgroup-v1 for root on v1/hybrid hosts, or rlimit); the run's
# warning must agree with it.
sc doctor --json
mem_mech=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"]["memory"])')
run_attack --memory 256M --timeout 20 -- /attacks/res membomb 256 "$marker"
case "$mem_mech" in
rlimit)
	# the fallback without a memory controller: mmap fails at the limit
	check "membomb (rlimit): the warning says RLIMIT_AS" err_has 'enforced as RLIMIT_AS'
	check "membomb (rlimit): allocation failed at the memory limit" attack_blocked
	;;
cgroup-v1 | cgroup-v2)
	# a cgroup memory limit: the kernel's OOM killer ends the bomb first
	check "membomb ($mem_mech): no weaker-limits warning" bash -c '! grep -q "RLIMIT_AS" <<<"$0"' "$ERR"
	check "membomb ($mem_mech): killed at the cgroup memory limit (137), never past it" \
		bash -c '[ "$0" -eq 137 ] && ! grep -q "^ESCAPED" <<<"$1"' "$RC" "$OUT"
	;;
*)
	check "membomb: doctor --json names the memory mechanism ('$mem_mech')" false
	;;
esac
check "membomb: no process is left on the host" wait_until no_process_with "$marker"
# Other work on the host moves MemAvailable too, hence 512 MB of slack: a
# bomb past its limit (it stops at 4 GB) that kept its memory would fail.
mem_back() { [ "$(mem_available)" -ge $((mem_before - 524288)) ]; }
check "membomb: the host's MemAvailable is back" wait_until mem_back

# --- inherited fds ---
fd_file="$T_WORK/fd-target"
echo host-content >"$fd_file"
chmod 666 "$fd_file"
o=$(as_user bash -c 'exec 3>>"$1" 5<"$2" 9<"$1"; exec "$0" run --policy default --timeout 20 -v "$3:/attacks:ro" -- /attacks/res fds' \
	"$SC_BIN" "$fd_file" "$T_WORK" "$ATTACKS" 2>&1 </dev/null)
RC=$? OUT=$o ERR=""
show_attack
check "fds: only 0, 1 and 2 reach the cell" attack_blocked
check "fds: the host file behind fd 3 is unchanged" bash -c '[ "$(cat "$0")" = host-content ]' "$fd_file"
# Control: outside a cell, with only fd 3 added, the program does report it.
o=$(as_user python3 -c 'import os, sys
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
if fd != 3:
    os.dup2(fd, 3)
os.set_inheritable(3, True)
os.closerange(4, 4096)
os.execv(sys.argv[1], [sys.argv[1], "fds"])' "$ATTACKS/res" "$T_WORK/fd-control" 2>&1 </dev/null)
RC=$? OUT=$o
check "fds control: the same program outside a cell does see fd 3" out_has '^ESCAPED: find inherited fds'
rm -f "$T_WORK/fd-control"

# --- kill a host process ---
as_user sleep 1000.$$ </dev/null >/dev/null 2>&1 &
victim_wrapper=$!
victim=""
for _ in $(seq 600); do victim=$(pgrep -f "^sleep 1000.$$\$" | head -1); [ -n "$victim" ] && break; sleep 0.1; done
check "kill: the host process to attack is running" [ -n "$victim" ]
run_attack -- /attacks/res kill "${victim:-999999}"
check "kill: every signal to the host process fails" attack_blocked
check "kill: the host process is still alive" kill -0 "${victim:-999999}"
[ -n "$victim" ] && kill "$victim" 2>/dev/null
wait "$victim_wrapper" 2>/dev/null

# --- setuid ---
passwd_before=$(sha256sum /etc/passwd /etc/shadow 2>/dev/null)
run_attack -- /attacks/res setuid
check "setuid: a setuid-root program gains nothing" attack_blocked
check "setuid: the setuid program did run" out_has 'setuid-root program: check uids and capabilities'
check "setuid: /etc/passwd and /etc/shadow on the host are unchanged" bash -c '[ "$(sha256sum /etc/passwd /etc/shadow 2>/dev/null)" = "$0" ]' "$passwd_before"

# --- a daemon that tries to outlive the cell ---
marker="sc-orphan-$$-$RANDOM"
orphan_out="$T_DIR/orphan.out"
: >"$orphan_out"
chmod 666 "$orphan_out"
as_user "$SC_BIN" run --policy default --timeout 60 -v "$ATTACKS:/attacks:ro" \
	-- /attacks/res orphan "$marker" </dev/null >"$orphan_out" 2>&1 &
orphan=$!
for _ in $(seq 600); do has_command "res sleeper $marker" && break; sleep 0.1; done
check "orphan: the daemon runs while the cell does (seen from the host)" has_command "res sleeper $marker"
wait "$orphan"
RC=$? OUT=$(cat "$orphan_out") ERR=""
show_attack
check "orphan: the cell ended normally" attack_blocked
for _ in $(seq 600); do no_process_with "$marker" && break; sleep 0.1; done
check "orphan: it did not outlive the cell" no_process_with "$marker"

finish
