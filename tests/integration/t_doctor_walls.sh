#!/usr/bin/env bash
# sandcell doctor on Landlock and on hosts that restrict user namespaces
# (issue 36). The restricting sysctls are shown through a stand-in
# /proc/sys (SANDCELL_DOCTOR_SYSCTL_ROOT), one at a time: each gets its
# own diagnosis and the exact fix. The restricted-host behaviour itself
# (a real Ubuntu 24.04 AppArmor refusal) is not tested here.
. "$(dirname "$0")/../lib.sh"

line() { printf '%s\n' "$OUT" | grep "^$1 "; }

abi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(max(0, l.syscall(444, None, 0, 1)))')
sc doctor
if [ "$abi" -ge 2 ]; then
	check "doctor names the kernel's Landlock ABI" bash -c "printf '%s' \"\$1\" | grep -q '^landlock .*ok .*ABI $abi, enforced around every cell: filesystem'" _ "$OUT"
else
	check "doctor warns that there is no Landlock" bash -c "printf '%s' \"\$1\" | grep -q '^landlock .*warn .*Landlock'" _ "$OUT"
fi
check "doctor: the real sysctls restrict nothing here" bash -c "printf '%s' \"\$1\" | grep -q '^sysctl .*ok .*no sysctl restricts'" _ "$OUT"

FAKE="$T_DIR/sys"
fake() { # NAME VALUE: a stand-in /proc/sys with this one sysctl set
	rm -rf "$FAKE"
	mkdir -p "$FAKE/kernel" "$FAKE/user"
	printf '%s\n' "$2" >"$FAKE/$1"
	chmod -R a+rX "$FAKE"
}
doctor_with() {
	fake "$1" "$2"
	T_EXTRA_ENV="SANDCELL_DOCTOR_SYSCTL_ROOT=$FAKE" sc doctor --json
	DETAIL=$(printf '%s' "$OUT" | python3 -c 'import json,sys; c=[c for c in json.load(sys.stdin)["checks"] if c["name"]=="sysctl"][0]; print(c["status"], c["detail"], "FIX:", c["fix"])')
}
has() { printf '%s' "$DETAIL" | grep -qF -- "$1"; }

doctor_with kernel/apparmor_restrict_unprivileged_userns 1
check "apparmor_restrict_unprivileged_userns=1 is recognised" has "kernel.apparmor_restrict_unprivileged_userns=1"
check "... a warning while this caller gets through" has "warn "
check "... the fix: the AppArmor profile for this binary" has "scripts/install-apparmor.sh $SC_BIN"
check "... or the sysctl" has "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
check "... or root" has "run sandcell as root"

doctor_with kernel/unprivileged_userns_clone 0
check "Debian's unprivileged_userns_clone=0 is recognised" has "kernel.unprivileged_userns_clone=0 (Debian)"
check "... the fix: the sysctl, persisted" has "sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d/"

doctor_with user/max_user_namespaces 0
check "max_user_namespaces=0 is recognised" has "user.max_user_namespaces=0: no one may create user namespaces"
check "... the fix: a positive limit" has "sysctl -w user.max_user_namespaces=15000"

doctor_with kernel/apparmor_restrict_unprivileged_userns 0
check "apparmor_restrict_unprivileged_userns=0 restricts nothing" has "ok no sysctl restricts"

finish
