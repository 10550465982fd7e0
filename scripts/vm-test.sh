#!/usr/bin/env bash
# cgroup v2 limits on a real pure-v2 kernel: boot Debian's own kernel under
# qemu (TCG) with an initramfs holding busybox, build/sandcell and its
# libraries, and run tests/vm/cases.sh inside it as root and as an
# unprivileged user with a delegated subtree (the way systemd's user@.service
# delegates). Prints each case's result; exits non-zero if any fails.
#
# Environment: SANDCELL (default build/sandcell), VM_CACHE (kernel download
# cache, default build/vm-cache), VM_TIMEOUT (seconds, default 540),
# VM_LOG (console log, default build/vm-test.log).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
sandcell=${SANDCELL:-$src/build/sandcell}
cache=${VM_CACHE:-$src/build/vm-cache}
log=${VM_LOG:-$src/build/vm-test.log}
vm_timeout=${VM_TIMEOUT:-540}
marker=@@SCVM@@
start=$(date +%s)

die() {
	echo "vm-test: $*" >&2
	exit 1
}

for tool in qemu-system-x86_64 cpio gzip gcc dpkg-deb apt-get ldd; do
	command -v "$tool" >/dev/null || die "$tool not found (run scripts/setup.sh)"
done
busybox=/bin/busybox
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	ldd "$busybox" 2>&1 | grep -q 'not a dynamic' ||
	die "$busybox is not static (install busybox-static)"
[ -x "$sandcell" ] || die "$sandcell not built (run scripts/setup.sh)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- Debian's kernel: downloaded once, unpacked, never installed ----
mkdir -p "$cache"
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }') || true
if [ -n "$kpkg" ] && ! ls "$cache/${kpkg}"_*.deb >/dev/null 2>&1; then
	echo "vm-test: downloading $kpkg" >&2
	(cd "$cache" && apt-get download "$kpkg" >/dev/null 2>&1) ||
		echo "vm-test: download of $kpkg failed, trying the cache" >&2
fi
deb=$(ls -t "$cache"/linux-image-*_amd64.deb 2>/dev/null | head -n1) || true
[ -n "$deb" ] || die "no linux-image .deb in $cache (apt-get download linux-image-6.1.0-NN-amd64 there)"
kdir=$cache/$(basename "$deb" .deb)
if [ ! -d "$kdir/boot" ]; then
	# only what the VM needs: the kernel and the overlay module
	rm -rf "$kdir.tmp"
	mkdir -p "$kdir.tmp"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$kdir.tmp" --wildcards './boot/vmlinuz-*' '*/fs/overlayfs/overlay.ko*'
	mv "$kdir.tmp" "$kdir"
fi
# older kernels, from before Debian's last update
for old in "$cache"/linux-image-*; do
	case "$old" in "$deb" | "$kdir") ;; *) rm -rf "$old" ;; esac
done
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n1)
overlay_ko=$(find "$kdir/lib/modules" -name 'overlay.ko*' | head -n1)
[ -n "$overlay_ko" ] || die "overlay module not found in $deb"

# ---- the VM's root: merged /usr, busybox, sandcell + its libraries ----
root=$work/root
mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{etc,opt,proc,sys,dev,tmp,run,root,home,newroot,vm}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
cp "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list); do
	[ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
done
case "$overlay_ko" in
*.xz) xz -dc "$overlay_ko" >"$root/usr/lib/overlay.ko" ;;
*.zst) zstd -qdc "$overlay_ko" >"$root/usr/lib/overlay.ko" ;;
*) cp "$overlay_ko" "$root/usr/lib/overlay.ko" ;;
esac

cp "$sandcell" "$root/usr/bin/sandcell"
# every library the binary loads, at its own path (under /usr: merged /usr),
# and libmicrohttpd with its own (loaded on demand, by serve)
mhd=$(ldconfig -p | awk '/libmicrohttpd\.so\.12 .*x86-64/ { print $NF; exit }')
[ -n "$mhd" ] || die "libmicrohttpd.so.12 not found (run scripts/setup.sh)"
for lib in $( (ldd "$sandcell"; echo "$mhd"; ldd "$mhd") | grep -o '/[^ ]*' | sort -u); do
	dst=$root/usr${lib#/usr}
	mkdir -p "$(dirname "$dst")"
	cp -L "$lib" "$dst"
done

# the test's own static helpers
for prog in dropuid memhog forkbomb spin cgpeek; do
	gcc -static -O2 -Wall -Wextra -Werror -o "$root/usr/bin/$prog" "tests/vm/$prog.c"
done
cp tests/vm/init.sh "$root/init"
cp tests/vm/cases.sh "$root/vm/cases.sh"
chmod 0755 "$root/init"

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
cell:x:1000:1000:cell:/home/cell:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
cell:x:1000:
nogroup:x:65534:
EOF
echo vm >"$root/etc/hostname"

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# ---- boot ----
# -accel tcg explicitly: KVM hangs on this host and accel=kvm:tcg picks it.
echo "vm-test: booting $(basename "$vmlinuz") under qemu (tcg)" >&2
mkdir -p "$(dirname "$log")"
set +e
timeout "$vm_timeout" qemu-system-x86_64 -accel tcg -smp 2 -m 1G -nic none \
	-nographic -no-reboot -serial mon:stdio \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet loglevel=3" </dev/null >"$log" 2>&1
qrc=$?
set -e

# Serial output carries CRs and terminal escapes: strip them, keep our lines.
results=$(tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' |
	grep -o "$marker.*" | sed "s/^$marker //")
echo "$results" | grep -v '^end$' | sed 's/^/  /'
elapsed=$(($(date +%s) - start))

pass=$(echo "$results" | grep -c '^RESULT .* PASS' || true)
fail=$(echo "$results" | grep -c '^RESULT .* FAIL' || true)
if ! echo "$results" | grep -q '^end$'; then
	echo "vm-test: the VM did not finish (qemu status $qrc); console log: $log" >&2
	fail=$((fail + 1))
fi
if [ "$pass" -eq 0 ]; then
	echo "vm-test: no case passed; console log: $log" >&2
	fail=$((fail + 1))
fi
# Both runs of tests/vm/cases.sh must have reported, and the same cases:
# a run that died early must not pass unnoticed.
cases_of() { echo "$results" | awk -v w="$1" '$1 == "RESULT" && $2 == w {print $3}' | sort; }
for who in root user; do
	if [ -z "$(cases_of "$who")" ]; then
		echo "vm-test: no result from the $who run; console log: $log" >&2
		fail=$((fail + 1))
	fi
done
if [ "$(cases_of root)" != "$(cases_of user)" ]; then
	echo "vm-test: the root and user runs reported different cases: root: $(cases_of root | tr '\n' ' '); user: $(cases_of user | tr '\n' ' ')" >&2
	fail=$((fail + 1))
fi
if [ -z "$(cases_of user-scope)" ]; then
	echo "vm-test: no result from the delegated-scope run; console log: $log" >&2
	fail=$((fail + 1))
fi
echo "vm-test: $pass passed, $fail failed, ${elapsed}s" >&2
[ "$fail" -eq 0 ]
