#!/bin/sh
# /init of the VM that scripts/vm-test.sh boots: a pure cgroup v2 host.
# Stage 1 (the initramfs): copy the root into a tmpfs and switch_root, because
# pivot_root (which every cell does) is refused while / is the initramfs.
# Stage 2: mount the API filesystems, set up cgroups, run tests/vm/cases.sh as
# root and as uid 1000 with a delegated subtree, power off.
export PATH=/usr/bin:/usr/sbin
M=@@SCVM@@

if [ "$1" != stage2 ]; then
	mount -t tmpfs -o mode=0755 tmpfs /newroot
	for d in /*; do
		[ "$d" = /newroot ] || cp -a "$d" /newroot/
	done
	exec switch_root /newroot /init stage2
fi

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
# as systemd mounts it on a pure v2 host
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
hostname vm
# loopback, for the cases' servers on 127.0.0.1
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up

echo "$M INFO vm kernel $(uname -r), $(nproc) cpus"
# Debian builds overlayfs as a module; no modules.dep here, so insmod by path.
if insmod /usr/lib/overlay.ko; then
	echo "$M RESULT vm overlay-module PASS"
else
	echo "$M RESULT vm overlay-module FAIL insmod failed"
fi

# Root's own cgroup is / (the root cgroup): controllers for its children.
echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control

sh /vm/cases.sh root /sys/fs/cgroup

# The unprivileged user gets what systemd's user@.service delegation gives:
# a subtree it owns (/user), its processes in a leaf (/user/shell).
cg=/sys/fs/cgroup/user
mkdir $cg $cg/shell
chown 1000:1000 $cg $cg/cgroup.procs $cg/cgroup.subtree_control $cg/cgroup.threads \
	$cg/shell $cg/shell/cgroup.procs $cg/shell/cgroup.threads
mkdir -p /home/cell /run/user/1000
chown 1000:1000 /home/cell /run/user/1000
chmod 0700 /run/user/1000
echo $$ > $cg/shell/cgroup.procs
HOME=/home/cell XDG_RUNTIME_DIR=/run/user/1000 USER=cell LOGNAME=cell \
	dropuid 1000 1000 sh /vm/cases.sh user $cg
echo $$ > /sys/fs/cgroup/cgroup.procs

# A delegated cgroup holding nothing but sandcell (what 'systemd-run --user
# --scope -p Delegate=yes sandcell ...' gives): sandcell must move itself
# into a leaf before it can enable controllers for its cells.
scope=/sys/fs/cgroup/run-1.scope
mkdir $scope
chown 1000:1000 $scope $scope/cgroup.procs $scope/cgroup.subtree_control $scope/cgroup.threads
sh -c "echo \$\$ > $scope/cgroup.procs && exec dropuid 1000 1000 env HOME=/home/cell \
	XDG_RUNTIME_DIR=/run/user/1000 sandcell run --json --memory 64M -- memhog" \
	>/tmp/scope.json 2>/tmp/scope.err
rc=$?
hit=$(sed -n 's/.*"limit_hit":"\([a-z]*\)".*/\1/p' /tmp/scope.json)
peak=$(sed -n 's/.*"peak_memory":\([0-9]*\).*/\1/p' /tmp/scope.json)
if [ $rc -eq 137 ] && [ "$hit" = memory ] && [ "${peak:-0}" -gt 0 ] && [ "$peak" -le 67108864 ]; then
	echo "$M RESULT user-scope memory PASS exit 137, limit_hit memory, peak_memory $peak"
else
	echo "$M RESULT user-scope memory FAIL exit $rc, limit_hit '$hit', peak_memory '$peak', err '$(head -c 300 /tmp/scope.err)'"
fi
left=$(ls -d $scope/sandcell/*/ 2>/dev/null)
if [ -z "$left" ] && [ -z "$(cat $scope/cgroup.procs $scope/sandcell-self/cgroup.procs 2>/dev/null)" ]; then
	echo "$M RESULT user-scope cgroup-removed PASS"
else
	echo "$M RESULT user-scope cgroup-removed FAIL left: $left"
fi

echo "$M end"
sync
poweroff -f
