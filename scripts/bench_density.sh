#!/usr/bin/env bash
# Density (issue #20): N idle long-lived cells at once. Prints
#   - the create rate (N `sandcell create` from as many processes as cores)
#     and the busy CPU per create (all of the machine's, kernel threads
#     included, from /proc/stat; goal: >= 300 created/s);
#   - host memory per cell: the MemAvailable drop, and its parts from
#     /proc/meminfo (the inits' anonymous pages, kernel slab, page tables,
#     kernel stacks; goal: <= 0.5 MiB each);
#   - an exec of /bin/true into the last cell against /bin/true spawned on
#     the host, alternating (goal: within the warm-exec goal, <= 2.0x);
#   - pivot_root's time in a one-shot run before and with the N cells (it
#     walks every task on the host; needs strace);
#   - the remove rate (`sandcell rm -f`, 50 names a process, as many
#     processes as cores; goal: >= 1,000/s) and its CPU, deferred kernel
#     work (cgroup offlining, namespace cleanup) included;
#   - what is left afterwards: state directories, cgroups, processes (none).
# The state directory's file system is printed too: creating a cell makes
# a few files there, and a disk file system costs more than a tmpfs.
# usage: scripts/bench_density.sh [N] [-- CREATE-OPTIONS...]   (default N 300)
#   SANDCELL_BIN=path  the binary to measure (default build/sandcell)
#   STATE_DIR=dir      where the cells' state goes (default a new dir in /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300}
shift || true
[ "${1:-}" = -- ] && shift
sc=${SANDCELL_BIN:-$PWD/build/sandcell}
[ -x "$sc" ] || scripts/setup.sh
cmake --build build --target alt >/dev/null
alt=$PWD/build/tests/alt
jobs=$(nproc)
work=$(mktemp -d "${STATE_DIR:-/tmp}/sandcell-density.XXXXXX")
chmod 755 "$work"
export SANDCELL_ROOT=$work
prefix=dn$$-
names() { seq "$n" | sed "s/^/$prefix/"; }
cleanup() {
	names | xargs -r -P "$jobs" -n 50 "$sc" rm -f >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# busy CPU in ms (user nice system irq softirq; USER_HZ ticks)
hz=$(getconf CLK_TCK)
busy_ms() { awk -v hz="$hz" '/^cpu / { print ($2 + $3 + $4 + $7 + $8) * 1000 / hz }' /proc/stat; }
now_ns() { date +%s%N; }
meminfo() { awk '{ sub(":", "", $1); print $1, $2 }' /proc/meminfo; }
# Wait until MemAvailable holds still (deferred frees of earlier cells,
# RCU, kworkers), at most 20 s, so that a drop is this run's.
settle() {
	local a b i
	a=$(awk '/^MemAvailable/ { print $2 }' /proc/meminfo)
	for i in $(seq 20); do
		sleep 1
		b=$(awk '/^MemAvailable/ { print $2 }' /proc/meminfo)
		[ $((a > b ? a - b : b - a)) -lt 512 ] && return
		a=$b
	done
}

echo "density: $n cells, $jobs cores, kernel $(uname -r), state on $(stat -f -c %T "$work")"
for s in user.max_user_namespaces kernel.pid_max kernel.threads-max fs.file-max; do
	printf '  %s = %s' "$s" "$(sysctl -n "$s" 2>/dev/null || echo '?')"
done
printf '  ulimit -n = %s\n' "$(ulimit -n)"

# pivot_root walks every task on the host (chroot_fs_refs): its median time
# in 21 one-shot runs (strace -T), and the host's task count
pivot() {
	command -v strace >/dev/null || { echo "pivot_root ? (no strace)"; return; }
	local us
	us=$(for _ in $(seq 21); do
		strace -f -T -e trace=pivot_root "$sc" run --pids 0 --memory 0 -- /bin/true 2>&1 >/dev/null |
			grep -o '<[0-9.]*>' | tr -d '<>'
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.0f", NR ? a[int((NR + 1) / 2)] * 1e6 : 0 }')
	echo "pivot_root $us us at $(ps -eL --no-headers | wc -l) host tasks"
}
pivot0=$(pivot)

settle
meminfo >"$work/mem0"
b0=$(busy_ms) t0=$(now_ns)
if ! names | xargs -P "$jobs" -I{} "$sc" create "$@" {} >/dev/null 2>"$work/create.err"; then
	made=$("$sc" ps --json | grep -o "\"name\":\"$prefix" | wc -l)
	echo "create failed after $made cells: $(sort -u "$work/create.err" | head -3)"
	exit 1
fi
t1=$(now_ns) b1=$(busy_ms)
settle
meminfo >"$work/mem1"
awk -v n="$n" -v t="$(((t1 - t0) / 1000))" -v c="$(awk -v a="$b0" -v b="$b1" 'BEGIN { print b - a }')" \
	'BEGIN { printf "create  %7.0f cells/s (goal >= 300)   %.2f ms busy CPU each\n", n / (t / 1e6), c / n }'
join "$work/mem0" "$work/mem1" | awk -v n="$n" '
	{ d[$1] = ($3 - $2) / n }
	END {
		printf "memory  %7.3f MiB each (MemAvailable drop; goal <= 0.50):", -d["MemAvailable"] / 1024
		split("AnonPages Slab PageTables KernelStack Percpu Shmem", k, " ")
		for (i = 1; i <= 6; i++) printf " %s %.0f", k[i], d[k[i]]
		printf " KiB\n"
	}'

out=$($alt 200 ::: "$sc" exec "$prefix$n" -- /bin/true ::: /bin/true)
awk '$1 == 1 { s = $2 } $1 == 2 { h = $2 }
	END { printf "exec    %7.2f ms into cell %d of them, host /bin/true %.2f ms: %.2f x (goal <= 2.00)\n", s, '"$n"', h, s / h }' <<<"$out"

echo "start   $pivot0 before; $(pivot) with the $n cells"

b2=$(busy_ms) t2=$(now_ns)
names | xargs -P "$jobs" -n 50 "$sc" rm -f
t3=$(now_ns)
sleep 2 # the kernel's deferred work (cgroup offlining, net namespaces) counts
b3=$(busy_ms)
awk -v n="$n" -v t="$(((t3 - t2) / 1000))" -v c="$(awk -v a="$b2" -v b="$b3" 'BEGIN { print b - a }')" \
	'BEGIN { printf "remove  %7.0f cells/s (goal >= 1000)  %.2f ms busy CPU each, deferred kernel work included\n", n / (t / 1e6), c / n }'

left_dirs=$(find "$work/run" -mindepth 1 -maxdepth 1 -name "$prefix*" 2>/dev/null | wc -l)
left_cg=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "$prefix*" 2>/dev/null | wc -l)
left_procs=$(pgrep -fc "sandcell create .*$prefix" || true)
echo "left    $left_dirs state dirs, $left_cg cgroups, $left_procs processes"
[ "$left_dirs" = 0 ] && [ "$left_cg" = 0 ] && [ "$left_procs" = 0 ]
