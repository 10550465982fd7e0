#!/usr/bin/env bash
# Security suite: escaping the cell's filesystem, namespaces and processes.
# Every case runs a hostile program under the `default` policy and checks
# that the program was stopped AND that the host did not change.
#
# Cases (attacks/escape_fs.c, escape_ns.c, ptrace.c, exe.c, exe_preload.c):
#   mount        mount tmpfs/proc/sysfs, bind /, remount read-only binds rw,
#                make / shared, the new mount API, mount_setattr
#                host: no mount of the attack's, nothing written to /attacks
#   umount       umount the /proc masks, /proc/sys, /attacks, /dev/pts, /proc, /
#                host: every host mount point is still there
#   pivot_root   pivot_root(".", ".") and pivot_root(/tmp, /tmp/old)
#   chroot       chroot, then the fchdir + chdir("..") escape, /proc/1/root/..
#   unshare      unshare() of every namespace type
#   setns        setns() into /proc/1/ns/* and a pidfd of PID 1
#   userns       nested user namespace: unshare, clone (with high bits), clone3,
#                raising user.max_user_namespaces; util-linux `unshare -Ur`
#   cmdline      /proc/1/cmdline does not show the host's sandcell command line
#   ptrace       PID 1 (attach, seize, process_vm_*, pidfd_getfd, kcmp,
#                /proc/1/{mem,environ,maps,...}) and a sibling process
#   exe          CVE-2019-5736: write /proc/self/exe, /proc/1/exe and every
#                /proc/PID/exe, also by reopening an O_PATH fd; change their
#                mode, times, xattrs, owner
#   exe-preload  the same from inside the host's sandcell binary run in the
#                cell (the command is /proc/self/exe with LD_PRELOAD), then from
#                a held O_PATH fd once nothing in the cell runs that binary
#                host: $SC_BIN stays byte-identical and keeps its metadata; in
#                the nobody run the binary belongs to nobody, i.e. to the
#                rootless caller, who is root of the cell
#   bind-symlink -v HOST:/bin/x, :/lib/... and :/sbin/... (symlinks in the
#                image) are refused with one line naming the symlink
#                host: nothing mounted, nothing created
# Each escape attempt also probes a host-only file and would overwrite it;
# the file must keep its content.
. "$(dirname "$0")/../lib.sh"

build_attacks escape_fs escape_ns ptrace exe exe_preload

if [ "$SANDCELL_TEST_AS" = nobody ]; then
	# The rootless caller owns the binary it runs (a `cp` install in ~/bin).
	chown 65534:65534 "$SC_BIN"
fi

HOST_ONLY="$T_DIR/host-only"
echo untouched >"$HOST_ONLY"
chmod 666 "$HOST_ONLY"
host_only_intact() { [ "$(cat "$HOST_ONLY")" = untouched ]; }

bin_before=$(host_file_state "$SC_BIN")
bin_sha_before=$(sha256sum <"$SC_BIN")
bin_identical() { [ "$(sha256sum <"$SC_BIN")" = "$bin_sha_before" ]; }
bin_unchanged() { [ "$(host_file_state "$SC_BIN")" = "$bin_before" ]; }
mounts_before=$(host_mountpoints)
one_line_err_with() { err_one_line && err_has "$1"; }
host_mounts_kept() { [ -z "$(comm -23 <(printf '%s\n' "$mounts_before") <(host_mountpoints))" ]; }

# --- mount / umount / pivot_root / chroot ---
run_attack -- /attacks/escape_fs mount "$HOST_ONLY"
check "mount: every mount attempt is blocked" attack_blocked
check "mount: no mount of the attack's appears on the host" bash -c '! grep -q sc-attack-mount /proc/self/mountinfo'
check "mount: nothing was written through the read-only bind" test ! -e "$ATTACKS/sc-attack-written"
check "mount: the host-only file is untouched" host_only_intact

run_attack -- /attacks/escape_fs umount "$HOST_ONLY"
check "umount: every umount is blocked" attack_blocked
check "umount: every host mount point is still there" host_mounts_kept

run_attack -- /attacks/escape_fs pivot_root "$HOST_ONLY"
check "pivot_root: blocked" attack_blocked
check "pivot_root: the host-only file is untouched" host_only_intact

run_attack -- /attacks/escape_fs chroot "$HOST_ONLY"
check "chroot+fchdir: blocked" attack_blocked
check "chroot+fchdir: the host-only file is untouched" host_only_intact

# --- namespaces ---
run_attack -- /attacks/escape_ns unshare "$HOST_ONLY"
check "unshare: every namespace type is refused" attack_blocked
check "unshare: the host-only file is untouched" host_only_intact

run_attack -- /attacks/escape_ns setns "$HOST_ONLY"
check "setns: blocked" attack_blocked
check "setns: the host-only file is untouched" host_only_intact

max_userns=$(cat /proc/sys/user/max_user_namespaces)
run_attack -- /attacks/escape_ns userns "$HOST_ONLY"
check "nested user namespace: blocked" attack_blocked
check "nested user namespace: the host's user.max_user_namespaces is unchanged" \
	bash -c '[ "$(cat /proc/sys/user/max_user_namespaces)" = "$0" ]' "$max_userns"
sc run --timeout 20 -- unshare -Ur id -u
show_attack
check "nested user namespace: util-linux 'unshare -Ur' fails" bash -c '[ '$RC' -ne 0 ] && ! grep -qx 0 <<<"$0"' "$OUT"

# --- ptrace ---
run_attack -- /attacks/ptrace pid1
check "ptrace PID 1: attach, seize, memory and fds of PID 1 are refused" attack_blocked
check "ptrace PID 1: init still reported the command's status (not hijacked)" expect_rc 0
run_attack -- /attacks/ptrace sibling
check "ptrace a sibling process: refused" attack_blocked

# --- PID 1's command line: init is a copy of the host's sandcell process ---
sc run --timeout 20 -- sh -c 'cat /proc/1/cmdline 2>/dev/null | tr "\0" " "; echo; ps -o args= -p 1' host-arg-marker-$$
check "cmdline: the cell does not see the host's command line in /proc/1/cmdline" \
	bash -c '[ "$0" -eq 0 ] && ! grep -q "host-arg-marker\|$1" <<<"$2"' "$RC" "$SC_BIN" "$OUT"

# --- CVE-2019-5736: the runtime's own binary ---
for c in self pid1 all; do
	run_attack -- /attacks/exe "$c"
	check "exe $c: writing /proc/.../exe is refused" attack_blocked
	check "exe $c: the host's sandcell binary is byte-identical" bin_identical
	check "exe $c: the host's sandcell binary keeps mode, owner, times, xattrs" bin_unchanged
done
# When the cell could change the host's binary (a rootless caller owns it),
# commands are exec'd by a trampoline run from a sealed memfd, so
# /proc/self/exe never reaches that binary; when it could not (root's
# binary is owned by an id the cell does not map), the attack may run in
# it and every change is refused. Where Landlock walls the cell in, the
# host's binary is outside the cell's root and cannot be exec'd at all.
run_attack -e LD_PRELOAD=/attacks/exe_preload.so -e ASAN_OPTIONS=verify_asan_link_order=0 \
	-- /proc/self/exe version
landlock_abi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None); print(max(0, l.syscall(444, None, 0, 1)))')
if [ "$SANDCELL_TEST_AS" = nobody ] || [ "$landlock_abi" -ge 2 ]; then
	check "exe-preload: /proc/self/exe does not run the caller's own binary in the cell" \
		bash -c '[ '$RC' -eq 126 ] && ! grep -q "ATTEMPT: readlink(/proc/self/exe) from a process running the host binary" <<<"$0" && ! grep -q "^sandcell [0-9]" <<<"$0"' "$OUT"
else
	check "exe-preload: the attack ran inside root's binary and every change was refused" attack_blocked
fi
check "exe-preload: the host's sandcell binary is byte-identical" bin_identical
check "exe-preload: the host's sandcell binary keeps mode, owner, times, xattrs" bin_unchanged
if ! bin_unchanged; then
	echo "#   before: $bin_before"
	echo "#   after:  $(host_file_state "$SC_BIN")"
fi
# A #! line naming /proc/self/exe, in the first program the cell runs (e.g.
# from a hostile image or a bind), is resolved by the trampoline too.
printf '#!/proc/self/exe\n' >"$ATTACKS/shebang"
chmod 755 "$ATTACKS/shebang"
run_attack -e LD_PRELOAD=/attacks/exe_preload.so -e ASAN_OPTIONS=verify_asan_link_order=0 \
	-- /attacks/shebang version
if [ "$SANDCELL_TEST_AS" = nobody ]; then
	check "exe-shebang: a script naming /proc/self/exe does not run the caller's own binary" \
		bash -c '[ '$RC' -ne 0 ] && ! grep -q "ATTEMPT: readlink(/proc/self/exe) from a process running the host binary" <<<"$0" && ! grep -q "^sandcell [0-9]" <<<"$0"' "$OUT"
else
	check "exe-shebang: nothing escaped" bash -c '! grep -q "^ESCAPED" <<<"$0"' "$OUT"
fi
check "exe-shebang: the host's sandcell binary keeps mode, owner, times, xattrs" bin_unchanged

# --- binds whose cell side is (or passes through) a symlink ---
bind_src="$T_WORK/bind-src-$$"
mkdir -p "$bind_src"
echo host-data >"$bind_src/f"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$bind_src"
for target in /bin/sc-attack-bind /lib/sc-attack-bind/x /sbin/sc-attack-bind; do
	sc run --timeout 20 -v "$bind_src:$target" -- true
	show_attack
	check "bind-symlink $target: refused with 125" expect_rc 125
	check "bind-symlink $target: one-line error naming the symlink" one_line_err_with symlink
	check "bind-symlink $target: nothing mounted on the host" bash -c '! grep -qF -- "$0" /proc/self/mountinfo' "$bind_src"
	check "bind-symlink $target: nothing created on the host" bash -c '! ls -A /usr/bin /usr/sbin /usr/lib | grep -q sc-attack-bind'
done
check "bind-symlink: the bind source is unchanged" bash -c '[ "$(ls -A "$0")" = f ] && [ "$(cat "$0/f")" = host-data ]' "$bind_src"

finish
