#!/usr/bin/env bash
# Security suite: kernel interfaces a cell must not reach under the
# `default` policy. Each case runs attacks/kernel.c CASE in a cell, checks
# that every attempt failed, and checks a host-side fact afterwards.
#
# Cases:
#   keyctl       add_key, join/read keyrings, request_key
#                host: no key of the attack's, the cell user owns no keys
#   bpf          BPF_MAP_CREATE, BPF_PROG_LOAD (socket filter, kprobe)
#   perf         perf_event_open (own process, system-wide, hardware)
#   io_uring     io_uring_setup (plain and SQPOLL)
#   userfaultfd  the syscall (also UFFD_USER_MODE_ONLY), /dev/userfaultfd, mknod
#   modules      init_module, finit_module, delete_module, kernel.modprobe
#                host: the list of modules is unchanged
#   reboot       reboot(CAD_ON), kexec_load and kexec_file_load (unload)
#                host: same boot id, ctrl-alt-del setting unchanged
#   clock        clock_settime, settimeofday, clock_adjtime, adjtimex (+1h)
#                host: the boot time (wall clock minus uptime) is unchanged
#   handle       name_to_handle_at, open_by_handle_at of a filesystem root
#                ("shocker"); host: a host-only file is untouched
#   privileged   iopl, ioperm, swapon, acct, quotactl, syslog, sethostname,
#                personality(READ_IMPLIES_EXEC), mknod of a block device
#                host: hostname and swap list unchanged
# For every case: no new kernel warning (BUG/WARNING/Oops) in the host's log.
. "$(dirname "$0")/../lib.sh"

build_attacks kernel

HOST_ONLY="$T_DIR/host-only"
echo untouched >"$HOST_ONLY"
chmod 666 "$HOST_ONLY"

kernel_warnings() { dmesg 2>/dev/null | grep -cE 'BUG:|WARNING:|Oops|general protection|Call Trace' || true; }
warnings_before=$(kernel_warnings)
no_new_kernel_warnings() { [ "$(kernel_warnings)" -le "$warnings_before" ]; }

# The cell's root as the host sees it (a user the caller maps; owns the keys
# the cell would make).
sc run -- cat /proc/self/uid_map
cell_uid=$(awk 'NR==1 {print $2}' <<<"$OUT")
check "the cell's root maps to a host user" bash -c '[[ "$0" =~ ^[0-9]+$ ]]' "$cell_uid"
key_users_line() { grep -E "^ *$cell_uid:" /proc/key-users || true; }
keys_unchanged() { [ "$(key_users_line)" = "$keys_before" ]; }

kernel_case() {
	local name=$1
	shift
	run_attack -- /attacks/kernel "$name" "$@"
	check "$name: every attempt is blocked" attack_blocked
	check "$name: no new kernel warning on the host" no_new_kernel_warnings
}

keys_before=$(key_users_line)
kernel_case keyctl
check "keyctl: no key of the attack's on the host" bash -c '! grep -q sc-attack /proc/keys'
check "keyctl: the cell's user owns no new keys on the host" keys_unchanged

kernel_case bpf
kernel_case perf
kernel_case io_uring
check "io_uring: no io_uring kernel thread is left" bash -c '! pgrep iou-sq >/dev/null'
kernel_case userfaultfd

modules_before=$(ls /sys/module | sort | md5sum)
kernel_case modules
check "modules: the host's module list is unchanged" bash -c '[ "$(ls /sys/module | sort | md5sum)" = "$0" ]' "$modules_before"

boot_id=$(cat /proc/sys/kernel/random/boot_id)
cad=$(cat /proc/sys/kernel/ctrl-alt-del)
kernel_case reboot
check "reboot: the host did not reboot (same boot id)" bash -c '[ "$(cat /proc/sys/kernel/random/boot_id)" = "$0" ]' "$boot_id"
check "reboot: the host's ctrl-alt-del setting is unchanged" bash -c '[ "$(cat /proc/sys/kernel/ctrl-alt-del)" = "$0" ]' "$cad"

btime() { awk '/^btime/ {print $2}' /proc/stat; }
btime_before=$(btime)
kernel_case clock
# btime = wall clock - time since boot: a step of the clock moves it; the
# attack steps by an hour, the slack covers rounding.
check "clock: the host's clock was not stepped (boot time unchanged)" \
	bash -c 'd=$(( $(awk "/^btime/ {print \$2}" /proc/stat) - $0 )); [ ${d#-} -le 2 ]' "$btime_before"

kernel_case handle "$HOST_ONLY"
check "handle: the host-only file is untouched" bash -c '[ "$(cat "$0")" = untouched ]' "$HOST_ONLY"

host_name=$(cat /proc/sys/kernel/hostname)
swaps=$(cat /proc/swaps)
kernel_case privileged
check "privileged: the host's hostname is unchanged" bash -c '[ "$(cat /proc/sys/kernel/hostname)" = "$0" ]' "$host_name"
check "privileged: the host's swap list is unchanged" bash -c '[ "$(cat /proc/swaps)" = "$0" ]' "$swaps"

finish
