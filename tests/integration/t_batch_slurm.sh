#!/usr/bin/env bash
# sandcell batch through Slurm for real: a private single-node Slurm (munge,
# slurmctld, slurmd on loopback, started here and stopped at the end even on
# failure) runs scripts/slurm/batch.sbatch as a 4-task array against the
# scripted LLM server; the shards merge to exactly one result per task.
# The daemons need root, which the test has in both variants; as nobody
# the job is submitted as uid 65534 (root may submit for another user), so
# its sandcell runs unprivileged.
. "$(dirname "$0")/../lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the Slurm daemons need root"
	exit 77
fi
for b in munged slurmctld slurmd sbatch scontrol; do
	if ! command -v "$b" >/dev/null; then
		echo "SKIP: $b not installed (apt-get install slurm-wlm munge)"
		exit 77
	fi
done
. "$(dirname "$0")/batch_lib.sh"

SD=$T_DIR/slurm
mkdir -p "$SD/munge" "$SD/ctld" "$SD/spool"
MUNGE_PID="" CTLD_PID="" SLURMD_PID=""

stop_pid() { # stop_pid PID: TERM, wait for it to exit, then KILL
	local p=$1
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
}
stop_slurm() {
	[ -n "$SLURMD_PID" ] && stop_pid "$SLURMD_PID"
	[ -n "$CTLD_PID" ] && stop_pid "$CTLD_PID"
	[ -n "$MUNGE_PID" ] && stop_pid "$MUNGE_PID"
	SLURMD_PID="" CTLD_PID="" MUNGE_PID=""
}
trap 'for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done; stop_conv; stop_slurm; t_cleanup' EXIT

# munge with a private socket, key and state, as the munge user
chown munge:munge "$SD/munge"
chmod 711 "$SD/munge" # munged wants its socket directory searchable by all
install -o munge -g munge -m 400 /etc/munge/munge.key "$SD/munge/munge.key" 2>/dev/null ||
	runuser -u munge -- sh -c "dd if=/dev/urandom of='$SD/munge/munge.key' bs=1k count=1 2>/dev/null && chmod 400 '$SD/munge/munge.key'"
chmod 711 "$T_DIR" "$SD"
runuser -u munge -- munged -F --socket="$SD/munge/sock" --key-file="$SD/munge/munge.key" \
	--pid-file="$SD/munge/pid" --log-file="$SD/munge/log" --seed-file="$SD/munge/seed" \
	>/dev/null 2>&1 &
MUNGE_PID=$!
for _ in $(seq 1200); do [ -S "$SD/munge/sock" ] && break; sleep 0.05; done
if [ ! -S "$SD/munge/sock" ]; then
	echo "FAIL - munged did not start: $(tail -2 "$SD/munge/log" 2>/dev/null)"
	exit 1
fi

export SLURM_CONF=$SD/slurm.conf
# The ports are picked by binding and closing, so another process may take
# one before the daemons bind it: then start again with new ones.
start_slurm() {
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
cat >"$SLURM_CONF" <<CONF
ClusterName=sandcelltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SD/munge/sock
CredType=cred/munge
StateSaveLocation=$SD/ctld
SlurmdSpoolDir=$SD/spool
SlurmctldPidFile=$SD/ctld.pid
SlurmdPidFile=$SD/slurmd.pid
SlurmctldLogFile=$SD/ctld.log
SlurmdLogFile=$SD/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -i >"$SD/ctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -N localhost >"$SD/slurmd.out" 2>&1 &
SLURMD_PID=$!
local deadline=$((SECONDS + 90))
while [ "$SECONDS" -lt "$deadline" ]; do
	if timeout 10 scontrol show node localhost 2>/dev/null | grep -q 'State=IDLE'; then return 0; fi
	# a daemon that could not bind its port exits: try new ports
	kill -0 "$CTLD_PID" 2>/dev/null && kill -0 "$SLURMD_PID" 2>/dev/null || break
	sleep 0.2
done
stop_pid "$SLURMD_PID"
stop_pid "$CTLD_PID"
SLURMD_PID="" CTLD_PID=""
return 1
}
up=0
for _ in 1 2 3; do
	if start_slurm; then up=1; break; fi
done
if [ "$up" -ne 1 ]; then
	echo "FAIL - the private Slurm did not come up"
	tail -5 "$SD/ctld.log" "$SD/slurmd.log" "$SD/ctld.out" "$SD/slurmd.out" 2>/dev/null
	exit 1
fi
pass "a private single-node Slurm is up (slurmctld, slurmd, munged)"

W=$T_WORK
write_rules "$W/rules.json"
for i in $(seq -w 1 10); do
	printf '{"id": "task-%s", "problem": "say <<%d>>", "answer": "%d"}\n' "$i" "$((10#$i))" "$((10#$i))"
done >"$W/tasks.jsonl"
start_conv "$W/rules.json"
give_to_user
submit_as=()
[ "$SANDCELL_TEST_AS" = nobody ] && submit_as=(--uid=65534 --gid=65534)

# the array job: 4 shards, each a `sandcell batch` of its share of the tasks
out=$(env SANDCELL="$SC_BIN" SANDCELL_ROOT="$SANDCELL_ROOT" \
	timeout 300 sbatch "${submit_as[@]}" --parsable --wait --array=0-3 --chdir="$W" --output="$W/slurm-%A_%a.out" \
	"$SRCDIR/scripts/slurm/batch.sbatch" "$W/tasks.jsonl" "$W/run" \
	--base-url "$FAKE_URL" --model fake-model --concurrency 2 --retry-base-ms 10 2>&1)
RC=$?
OUT=$out ERR=""
check "sbatch --wait: the 4-task array job succeeds" expect_rc 0
job=${out%%$'\n'*}
check "each array task wrote its own shard directory" \
	test -d "$W/run/shard-0-of-4" -a -d "$W/run/shard-1-of-4" -a -d "$W/run/shard-2-of-4" -a -d "$W/run/shard-3-of-4"
check "the array tasks ran sandcell batch (their logs say which shard)" \
	grep -q 'tasks in this shard' "$W"/slurm-*_3.out
check "the shards' results belong to the submitting user (uid $T_UID)" \
	bash -c '[ "$(stat -c %u "$0/run/shard-0-of-4/results.jsonl")" = "$1" ]' "$W" "$T_UID"
cat >"$W/merge.py" <<'PY'
import glob, json, sys
run = sys.argv[1]
seen = {}
for f in sorted(glob.glob(run + "/shard-*/results.jsonl")):
    for line in open(f):
        r = json.loads(line)
        seen.setdefault((r["id"], r["repeat"]), []).append(f)
ids = {"task-%02d" % i for i in range(1, 11)}
assert {k[0] for k in seen} == ids, sorted(seen)
assert all(len(v) == 1 for v in seen.values()), seen
assert len({v[0] for v in seen.values()}) > 1, "all tasks in one shard"
print("ok")
PY
check "merged, every task has exactly one result (and the shards split the tasks)" \
	bash -c "python3 -S '$W/merge.py' '$W/run' >/dev/null"
sc batch summarize "$W/run"
check "summarize merges the shard directories" \
	bash -c 'printf "%s" "$OUT" | grep -q "10 attempts of 10 tasks (10 expected, 0 missing)" && printf "%s" "$OUT" | grep -q "mean 1.0000"'
scontrol show job "$job" >/dev/null 2>&1
no_cells && pass "no cell is left" || fail "no cell is left"

stop_conv
daemons="$MUNGE_PID $CTLD_PID $SLURMD_PID"
stop_slurm
still=0
for p in $daemons; do kill -0 "$p" 2>/dev/null && still=1; done
check "the Slurm daemons are stopped" test "$still" -eq 0
finish
