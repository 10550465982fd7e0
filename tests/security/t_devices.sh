#!/usr/bin/env bash
# Security suite: kernel memory, keys, firmware, logs and terminals through
# /proc, /sys and /dev, under the `default` policy.
#
# Cases (attacks/devices.c, attacks/tiocsti.c):
#   kcore      read /proc/kcore, kernel addresses in /proc/kallsyms
#   keys       read /proc/keys, /proc/key-users, /proc/timer_list, sched_debug
#   firmware   read /sys/firmware/*, debugfs; mount a sysfs
#   mem        read /dev/mem, /dev/kmem, /dev/port; mknod them
#   kmsg       read /dev/kmsg, /proc/kmsg, syslog(); write a marker to
#              /dev/kmsg and to a mknod'ed kmsg
#              host: the marker is not in the host's kernel log
#   procsys    write kernel.hostname, domainname, core_pattern, drop_caches,
#              randomize_va_space, ip_forward, binfmt_misc; remount /proc/sys rw
#              host: each of those settings is unchanged
#   sysrq      write 'h' to /proc/sysrq-trigger, enable kernel.sysrq
#              host: no sysrq line appeared in the kernel log
#   tiocsti    TIOCSTI on the cell's stdin, a pty (the cell's own: run -t; a
#              user's terminal is never a cell's stdin, t_tty.sh) that the
#              cell first makes its controlling terminal, plain and with
#              high bits set (TIOCSTI | 1 << 32, | 0xffffffff << 32;
#              CVE-2019-10063): the filter refuses every one
#              host: nothing is waiting in the terminal's input queue; a
#              control run of the same program outside a cell shows the
#              check catches an injection
. "$(dirname "$0")/../lib.sh"

build_attacks devices tiocsti

kernel_log() { dmesg 2>/dev/null; }

for c in kcore keys firmware mem; do
	run_attack -- /attacks/devices "$c"
	check "$c: nothing readable" attack_blocked
done

marker="sc-attack-kmsg-$$-$RANDOM"
run_attack -- /attacks/devices kmsg "$marker"
check "kmsg: reading and writing the kernel log is blocked" attack_blocked
marker_not_logged() { ! kernel_log | grep -qF -- "$marker"; }
check "kmsg: the marker is not in the host's kernel log" marker_not_logged

sysctls="kernel/hostname kernel/domainname kernel/core_pattern kernel/randomize_va_space net/ipv4/ip_forward"
sysctl_state() { for k in $sysctls; do printf '%s=%s\n' "$k" "$(cat /proc/sys/$k 2>/dev/null)"; done; }
sysctl_before=$(sysctl_state)
run_attack -- /attacks/devices procsys
check "procsys: every write to /proc/sys is refused" attack_blocked
sysctls_unchanged() { [ "$(sysctl_state)" = "$sysctl_before" ]; }
check "procsys: the host's settings are unchanged" sysctls_unchanged

sysrq_lines() { kernel_log | grep -c 'sysrq' || true; }
sysrq_before=$(sysrq_lines)
run_attack -- /attacks/devices sysrq
check "sysrq: blocked" attack_blocked
no_new_sysrq() { [ "$(sysrq_lines)" -le "$sysrq_before" ]; }
check "sysrq: no sysrq line appeared in the host's kernel log" no_new_sysrq

# --- TIOCSTI: the cell's stdin is a pty nobody has as controlling tty ---
# tty_attack.py (run as the test user) makes the pty and reports what is
# left in its input queue; it is copied where the test user can read it.
cp "$(dirname "$0")/tty_attack.py" "$T_DIR/tty_attack.py"
chmod 644 "$T_DIR/tty_attack.py"
tty_attack() {
	local o e
	o=$(mktemp "$T_DIR/out.XXXXXX")
	e=$(mktemp "$T_DIR/err.XXXXXX")
	chmod 666 "$o" "$e"
	as_user python3 "$T_DIR/tty_attack.py" 30 "$@" >"$o" 2>"$e"
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
	show_attack
}
tty_clean() { out_has "^HOST-TTY-INPUT: b''$"; }
tty_injected() { out_has "^HOST-TTY-INPUT: b'.*$1"; }

payload="echo sc-attack-tiocsti-$$"
# With dev.tty.legacy_tiocsti off the kernel refuses TIOCSTI to anyone
# without CAP_SYS_ADMIN, so these checks could not fail: skip them then.
if [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 0)" = 1 ]; then
	tty_attack "$ATTACKS/tiocsti" plain "$payload"
	check "tiocsti control: outside a cell the same program does inject (so the checks below can fail)" tty_injected "$payload"
	for c in plain highbits; do
		tty_attack "$SC_BIN" run -t --policy default --timeout 20 -v "$ATTACKS:/attacks:ro" -- /attacks/tiocsti "$c" "$payload"
		check "tiocsti $c: the cell made the pty its controlling terminal" out_has "^BLOCKED: setsid() and TIOCSCTTY.*: done"
		check "tiocsti $c: every TIOCSTI is refused" attack_blocked
		check "tiocsti $c: nothing was pushed into the host's terminal" tty_clean
	done
else
	echo "# skip: tiocsti cases: dev.tty.legacy_tiocsti is off, the kernel refuses TIOCSTI anyway (they could not fail)"
fi

finish
