#!/usr/bin/env bash
# cgroup v1 limits on v1-only and hybrid hosts (the controllers in v1, none
# of memory/pids/cpu in v2). Root callers: a cgroup per cell in the memory,
# pids and cpu hierarchies, holding --memory and --pids across all of the
# cell's processes, reporting limit_hit and peak_memory, and gone after run,
# rm, and SIGKILL of the runner (then gc). Rootless callers keep the rlimit
# stand-ins and the warning. Pure v2 hosts: tests/vm.
. "$(dirname "$0")/../lib.sh"

# The v1 mount point of a controller ("" when it has none), from mountinfo.
v1_mount() {
	awk -v c="$1" '{ for (i = 7; i < NF; i++) if ($i == "-") {
		if ($(i + 1) == "cgroup" && $4 == "/" && ("," $(i + 3) ",") ~ ("," c ",")) { print $5; exit }
		break } }' /proc/self/mountinfo
}
MEM=$(v1_mount memory)
PIDS=$(v1_mount pids)
CPU=$(v1_mount cpu)
v2=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)
if [ -z "$MEM" ] || [ -z "$PIDS" ]; then
	echo "SKIP: no cgroup v1 memory and pids hierarchies here (tests/vm covers v2)"
	exit 77
fi
if [ -n "$v2" ] && grep -Eqw 'memory|pids|cpu' "$v2/cgroup.controllers" 2>/dev/null; then
	echo "SKIP: cgroup v2 has controllers here: cells use v2"
	exit 77
fi

# Cell cgroups named like $1 (a glob) left in any v1 hierarchy.
left_like() {
	local d found=""
	for d in "$MEM" "$PIDS" ${CPU:+"$CPU"}; do
		for x in "$d"/sandcell/$1; do
			[ -d "$x" ] && found="$found $x"
		done
	done
	printf '%s' "$found"
}
none_like() { [ -z "$(left_like "$1")" ]; }

# N processes that each allocate and touch MB MiB, then hold it a while.
cat >"$T_DIR/spread.py" <<'EOF'
import os, sys, time
n, mb = int(sys.argv[1]), int(sys.argv[2])
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        b = bytearray(mb << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        print("allocated", i, flush=True)
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
EOF
# Fork until refused; prints how many children were started.
cat >"$T_DIR/forks.py" <<'EOF'
import os, sys, time
limit = int(sys.argv[1])
kids = []
try:
    while len(kids) < limit:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("refused", e.errno, flush=True)
print("started", len(kids), flush=True)
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
EOF
chmod 644 "$T_DIR/spread.py" "$T_DIR/forks.py"
BINDS=(-v "$T_DIR/spread.py:/t/spread.py:ro" -v "$T_DIR/forks.py:/t/forks.py:ro")

if [ "$T_UID" -ne 0 ]; then
	# --- rootless: the rlimit fallback and its warning, no v1 cgroup ---
	as_user_exec "$SC_BIN" run --memory 64M --pids 32 -- true </dev/null >"$T_DIR/u.out" 2>"$T_DIR/u.err" &
	runner=$!
	wait "$runner"
	RC=$? OUT=$(cat "$T_DIR/u.out") ERR=$(cat "$T_DIR/u.err")
	check "rootless: the run works" expect_rc 0
	check "rootless: the warning says --memory is RLIMIT_AS" err_has 'enforced as RLIMIT_AS'
	check "rootless: and --pids RLIMIT_NPROC" err_has 'RLIMIT_NPROC'
	check "rootless: no v1 cgroup was made (run-$runner-*)" none_like "run-$runner-*"
	sc doctor --json
	check "rootless: doctor --json says rlimit for memory and pids" bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
l = json.load(sys.stdin)[\"limits\"]
assert l[\"memory\"] == l[\"pids\"] == l[\"cpu\"] == \"rlimit\", l"' "$OUT"
	finish
	exit
fi

# --- doctor names the mechanism ---
sc doctor --json
check "doctor --json: memory, pids and cpu use cgroup v1" bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
l = json.load(sys.stdin)[\"limits\"]
want = \"cgroup-v1\" if sys.argv[1] else \"rlimit\"
assert l[\"memory\"] == l[\"pids\"] == \"cgroup-v1\" and l[\"cpu\"] == want, l" "$1"' "$OUT" "$CPU"
sc doctor
check "doctor: the limits line says cgroup v1" out_has '^limits  *ok  *memory: cgroup v1 (memory.limit_in_bytes'

# --- memory spread over 4 processes x 40 MiB under --memory 64M: OOM ---
sc run --json --memory 64M "${BINDS[@]}" -- python3 /t/spread.py 4 40
export OUT
allocated=$(json_field stdout | grep -c '^allocated')
check "memory: limit_hit is memory" bash -c '[ "$(json_field limit_hit)" = memory ]'
check "memory: fewer than 4 of the 40 MiB processes got their memory ($allocated)" [ "$allocated" -lt 4 ]
check "memory: peak_memory is within the 64M (memory.max_usage_in_bytes)" \
	bash -c 'p=$(json_field peak_memory); [ "$p" -gt 0 ] && [ "$p" -le 67108864 ]'
check "memory: no weaker-limits warning" bash -c '! grep -q "weaker" <<<"$0"' "$ERR"
# control: the same with room for all four
sc run --json --memory 512M "${BINDS[@]}" -- python3 /t/spread.py 4 40
export OUT
check "memory control: all 4 allocate under --memory 512M" \
	bash -c '[ "$(json_field stdout | grep -c "^allocated")" -eq 4 ] && [ "$(json_field limit_hit)" = null ]'

# --- pids across processes ---
sc run --json --pids 16 "${BINDS[@]}" -- python3 /t/forks.py 64
export OUT
started=$(json_field stdout | sed -n 's/^started //p')
check "pids: forks were refused below 16 ($started started)" \
	bash -c '[ -n "$0" ] && [ "$0" -lt 16 ] && json_field stdout | grep -q "^refused 11"' "$started"
check "pids: limit_hit is pids (pids.events)" bash -c '[ "$(json_field limit_hit)" = pids ]'

# --- a long-lived cell: its limits are in the host's v1 files ---
name="v1cell$$"
marker="sleep 4545.$$"
sc create --memory 64M --pids 16 ${CPU:+--cpus 0.5} "${BINDS[@]}" "$name"
check "create works" expect_rc 0
# The leaf is the cell's name and a hash of its state root.
leaf=$(cd "$MEM/sandcell" 2>/dev/null && ls -d "$name".* 2>/dev/null | head -1)
check "the cell's cgroup is named after it ($leaf)" [ -n "$leaf" ]
check "memory.limit_in_bytes is 64M" [ "$(cat "$MEM/sandcell/$leaf/memory.limit_in_bytes" 2>/dev/null)" = 67108864 ]
if [ -e "$MEM/sandcell/$leaf/memory.memsw.limit_in_bytes" ]; then
	check "memory.memsw.limit_in_bytes is 64M too (no swap past it)" \
		[ "$(cat "$MEM/sandcell/$leaf/memory.memsw.limit_in_bytes")" = 67108864 ]
fi
check "pids.max is 16" [ "$(cat "$PIDS/sandcell/$leaf/pids.max" 2>/dev/null)" = 16 ]
if [ -n "$CPU" ]; then
	check "cpu.cfs_quota_us is 50000 of 100000" \
		[ "$(cat "$CPU/sandcell/$leaf/cpu.cfs_quota_us" 2>/dev/null)/$(cat "$CPU/sandcell/$leaf/cpu.cfs_period_us" 2>/dev/null)" = 50000/100000 ]
fi
as_user "$SC_BIN" exec "$name" -- sh -c "exec $marker" </dev/null >/dev/null 2>&1 &
execer=$!
wait_until has_command "$marker"
cmd_pid=$(pgrep -f -- "^$marker" | head -1)
check "an exec'd command is in the cell's memory and pids cgroups" \
	bash -c 'grep -q ":memory:/sandcell/$1\$" "/proc/$0/cgroup" && grep -q ":pids:/sandcell/$1\$" "/proc/$0/cgroup"' "${cmd_pid:-0}" "$leaf"
sc exec "$name" -- python3 /t/forks.py 64
check "pids: held across the cell's processes (init, the sleeper, these: fewer than 16)" \
	bash -c '[ "$(sed -n "s/^started //p" <<<"$0")" -lt 14 ]' "$OUT"
sc rm -f "$name"
check "rm works" expect_rc 0
wait "$execer" 2>/dev/null
check "rm: the cell's v1 cgroups are gone" none_like "$name.*"

# --- a run leaves nothing ---
as_user_exec "$SC_BIN" run --memory 64M --pids 32 -- true </dev/null >/dev/null 2>&1 &
runner=$!
wait "$runner"
RC=$?
check "run works" expect_rc 0
check "run: its v1 cgroups are gone (run-$runner-*)" none_like "run-$runner-*"

# --- SIGKILL of the runner, then gc ---
marker="sleep 4646.$$"
as_user_exec "$SC_BIN" run --memory 64M -- sh -c "exec $marker" </dev/null >/dev/null 2>&1 &
runner=$!
has_cgroup() { [ -n "$(left_like "run-$runner-*")" ]; }
wait_until eval 'has_cgroup && has_command "$marker"'
check "kill -9: the cell runs in its v1 cgroups" has_cgroup
cmd_pid=$(pgrep -f -- "^$marker" | head -1)
check "run: the command is in the cell's memory and pids cgroups (moved there before it started)" \
	bash -c 'grep -q ":memory:/sandcell/run-$1-" "/proc/$0/cgroup" && grep -q ":pids:/sandcell/run-$1-" "/proc/$0/cgroup"' "${cmd_pid:-0}" "$runner"
kill -KILL "$runner"
wait "$runner" 2>/dev/null
wait_until no_process_with "$marker"
check "kill -9: the cell died with its runner" no_process_with "$marker"
sc gc
check "gc works" expect_rc 0
check "kill -9 + gc: no v1 cgroup of that cell is left" none_like "run-$runner-*"
pkill -KILL -f -- "^$marker" 2>/dev/null || true

finish
