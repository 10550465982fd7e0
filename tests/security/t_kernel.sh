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
#
# Each attempt must fail with an errno that means "refused" (the policy's
# EPERM/ENOSYS, or EACCES, ENOENT, EROFS): a probe that fails with EINVAL or
# EFAULT never reached the check it is meant to test. At the end, every case
# runs again under a permissive policy (seccomp allowing everything; the
# rest of the cell unchanged) as a control: the attempts named in
# POLICY_STOPS must then get through the filter (succeed, or fail with a
# different errno), so the default run's refusal is the policy's. Attempts
# the kernel refuses without the policy too (bpf, clock, reboot(CAD_ON),
# module loading on most kernels) are listed as such: they guard the host,
# not the policy.
. "$(dirname "$0")/../lib.sh"

build_attacks kernel

HOST_ONLY="$T_DIR/host-only"
echo untouched >"$HOST_ONLY"
chmod 666 "$HOST_ONLY"

# Kernel-side faults only: a user process's trap ("traps: X general
# protection fault ip:...") and the OOM killer's stack dumps ("Call Trace"),
# which other tests running at the same time cause, are not ours to count.
kernel_warnings() {
	dmesg 2>/dev/null | grep -v 'traps:' |
		grep -cE 'BUG:|WARNING:|Oops:|general protection fault,|kernel BUG' || true
}
warnings_before=$(kernel_warnings)
no_new_kernel_warnings() { [ "$(kernel_warnings)" -le "$warnings_before" ]; }

# The cell's root as the host sees it (a user the caller maps; owns the keys
# the cell would make).
sc run -- cat /proc/self/uid_map
cell_uid=$(awk 'NR==1 {print $2}' <<<"$OUT")
check "the cell's root maps to a host user" bash -c '[[ "$0" =~ ^[0-9]+$ ]]' "$cell_uid"
key_users_line() { grep -E "^ *$cell_uid:" /proc/key-users || true; }
keys_unchanged() { [ "$(key_users_line)" = "$keys_before" ]; }

PERMISSIVE="$T_DIR/permissive.json"
echo '{"description": "control: seccomp allows everything", "seccomp": {"default_action": "allow"}}' >"$PERMISSIVE"
chmod 644 "$PERMISSIVE"

# attempts NAME: "what<TAB>result" per attempt of the output in $OUT, result
# an errno name or "escaped".
attempts() {
	python3 -c '
import re, sys
for line in sys.stdin.read().splitlines():
    m = re.match(r"BLOCKED: (.*): (E[A-Z0-9]+) \(", line)
    if m:
        print(m.group(1) + "\t" + m.group(2))
        continue
    m = re.match(r"ESCAPED: (.*?): ", line)
    if m:
        print(m.group(1) + "\tescaped")'
}
refusal_errnos() {
	! attempts <<<"$OUT" | cut -f2 | grep -qvxE 'EPERM|ENOSYS|EACCES|ENOENT|EROFS'
}

declare -A DEFAULT_RUN CASE_ARGS
kernel_case() {
	local name=$1
	shift
	run_attack -- /attacks/kernel "$name" "$@"
	check "$name: every attempt is blocked" attack_blocked
	check "$name: every attempt was refused (EPERM/ENOSYS/EACCES/ENOENT/EROFS, not a malformed call)" refusal_errnos
	check "$name: no new kernel warning on the host" no_new_kernel_warnings
	DEFAULT_RUN[$name]=$(attempts <<<"$OUT")
	CASE_ARGS[$name]="$*"
}

# Attempts (prefixes of what attack/kernel.c prints) that a cell's root
# without capabilities can make on any kernel, so that only the policy
# stops them.
declare -A POLICY_STOPS=(
	[keyctl]='add_key|keyctl(KEYCTL_JOIN_SESSION_KEYRING|keyctl(KEYCTL_GET_KEYRING_ID|keyctl(KEYCTL_READ'
	[perf]='perf_event_open(software clock, this process)'
	[io_uring]='io_uring_setup(8)'
	[userfaultfd]='userfaultfd(UFFD_USER_MODE_ONLY)'
	[privileged]='personality(READ_IMPLIES_EXEC)'
)
control_case() {
	local name=$1 what res ctl stops=${POLICY_STOPS[$1]:-} kernel_too=""
	# shellcheck disable=SC2086 # the case's arguments, split as given
	sc run --policy "$PERMISSIVE" --timeout 20 -v "$ATTACKS:/attacks:ro" -- /attacks/kernel "$name" ${CASE_ARGS[$name]}
	ctl=$(attempts <<<"$OUT")
	while IFS=$'\t' read -r what res; do
		[ -n "$what" ] || continue
		local c
		c=$(awk -F'\t' -v w="$what" '$1 == w {print $2}' <<<"$ctl")
		if [ -z "$c" ]; then
			fail "$name: $what: the control run did not report this attempt"
		elif [ "$c" != "$res" ]; then
			pass "$name: $what: stopped by the policy ($res; without it: ${c:-nothing})"
		elif [ -n "$stops" ] && grep -qE "^($(sed 's/[().]/\\&/g' <<<"$stops"))" <<<"$what"; then
			fail "$name: $what: the control run under a permissive policy got the same $c: the policy is not what stops it"
		else
			kernel_too="$kernel_too; $what ($res)"
		fi
	done <<<"${DEFAULT_RUN[$name]}"
	[ -z "$kernel_too" ] || echo "# $name: refused by the kernel without the policy too:${kernel_too#;}"
}

keys_before=$(key_users_line)
kernel_case keyctl
check "keyctl: no key of the attack's on the host" bash -c '! grep -q sc-attack /proc/keys'
check "keyctl: the cell's user owns no new keys on the host" keys_unchanged

kernel_case bpf
kernel_case perf
kernel_case io_uring
# (threads of the cell's user only: another test's cells may run io_uring)
iou_threads() { ps -eLo uid=,comm= | awk -v u="$cell_uid" '$1 == u && $2 ~ /^iou-sq/' | grep -c . || true; }
check "io_uring: no io_uring kernel thread of the cell's user is left" bash -c '[ "$0" -eq 0 ]' "$(iou_threads)"
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

# --- controls (after every host-side check: a control may leave keys) ---
for name in keyctl bpf perf io_uring userfaultfd modules reboot clock handle privileged; do
	control_case "$name"
done

finish
