#!/usr/bin/env bash
# Landlock, the second wall (issue 36). A cell process that got out of its
# mount namespace in a simulated way — a host process hands it an fd of a
# host directory over a unix socket bound into the cell — still cannot open
# the host's files; with "landlock": false in the policy it can (so this
# test fails without Landlock). In-cell loopback servers keep working by
# default; "connect": "proxy" refuses every TCP connect but the egress
# proxy's. --require-landlock and long-lived cells (exec, cp, commit).
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

abi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(max(0, l.syscall(444, None, 0, 1)))')
[ "$abi" -ge 2 ] || { echo "skip: this kernel has no usable Landlock (ABI $abi; needs >= 2: Linux >= 5.19, landlock in lsm=)"; exit 77; }

HOST="$T_DIR/hostside"
SOCKD="$T_DIR/sock"
mkdir -p "$HOST" "$SOCKD"
SECRET="host-secret-$$-$RANDOM"
printf '%s\n' "$SECRET" >"$HOST/secret"
chmod 755 "$HOST" && chmod 644 "$HOST/secret"
cp "$SRCDIR/tests/security/landlock_probe.py" "$SOCKD/probe.py"
chmod 777 "$SOCKD" && chmod 644 "$SOCKD/probe.py"
python3 "$SOCKD/probe.py" serve "$SOCKD/s" "$HOST" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; t_cleanup' EXIT
wait_until test -S "$SOCKD/s" || { echo "the fd server did not start"; exit 1; }

POL="$T_DIR/pol"
mkdir -p "$POL"
echo '{"landlock": false}' >"$POL/off.json"
echo '{"landlock": {"connect": "proxy"}}' >"$POL/proxy.json"
echo '{"landlock": {"filesystem": false}}' >"$POL/nofs.json"
chmod -R a+rX "$POL"

probe() { sc run "$@" -v "$SOCKD:/x" -- python3 /x/probe.py "${PROBE[@]}"; }

PROBE=(read /x/s secret)
probe
check "a host dir fd passed into the cell opens nothing (EACCES)" out_is EACCES
check "... and the cell ran" expect_rc 0
probe --policy "$POL/off.json"
check "with \"landlock\": false the same fd reads the host's file" out_is "$SECRET"
probe --policy "$POL/nofs.json"
check "with \"filesystem\": false too" out_is "$SECRET"

PROBE=(loopback)
probe
check "by default a server in the cell takes connects on 127.0.0.1" out_is connected
probe --policy "$POL/proxy.json"
check "\"connect\": \"proxy\" without egress: connect refused by Landlock" out_is EACCES
probe --policy "$POL/proxy.json" --net allowlist --allow-net example.com
check "\"connect\": \"proxy\" with egress: other ports still refused" out_is EACCES
PROBE=(connect 3128)
probe --policy "$POL/proxy.json" --net allowlist --allow-net example.com
check "\"connect\": \"proxy\" with egress: the proxy's port connects" out_is connected

sc run -- sh -c 'mkdir -p /testbed/a /testbed/b && echo 1 >/testbed/a/x && mv /testbed/a/x /testbed/b/x && ln /testbed/b/x /testbed/a/y && truncate -s 0 /testbed/a/y && echo fine'
check "renames and links across directories, truncate: all work in the cell" out_is fine

PROBE=(scope)
probe
check "abstract unix sockets and signals between the cell's processes work" out_is "abstract signal"

# Across the domain's edge: a host process that entered the cell's user,
# pid and network namespaces (as a host-side helper might) is outside the
# cell's Landlock domain, so the cell's processes can neither signal it nor
# reach its abstract unix socket (scoping, ABI 6), nor open the host's
# files through its /proc/PID/root (Landlock refuses ptrace-like access to
# a process outside the domain); with "landlock": false they can all three
# (same uid in the same namespaces: only Landlock stands in the way).
scope_edge() { # [POLICY-OPTION...]: prints what the cell could do
	local c="le$$" pid
	sc create "$@" -v "$SOCKD:/x" "$c"
	sc ps --json
	pid=$(jget "[c['pid'] for c in d if c['name']=='$c'][0]")
	# host root enters (init is not dumpable, so the test user could not);
	# in the cell it is uid 0, as the cell's own processes are
	nsenter -t "$pid" -U -p -n python3 "$SOCKD/probe.py" abstract-server "$SOCKD/edge-ready" "$HOST/secret" &
	local helper=$!
	wait_until test -e "$SOCKD/edge-ready"
	sc exec "$c" -- python3 /x/probe.py cross-edge
	echo "$OUT"
	kill "$helper" 2>/dev/null
	wait "$helper" 2>/dev/null
	rm -f "$SOCKD/edge-ready"
	sc rm -f "$c"
}
if [ "$abi" -ge 6 ] && command -v nsenter >/dev/null; then
	edge=$(scope_edge)
	check "a process that entered the cell from outside: no signal, no abstract socket, no /proc/PID/root" \
		test "$edge" = "signal:EPERM abstract:EPERM root:EACCES"
	edge=$(scope_edge --policy "$POL/off.json")
	check "... and with \"landlock\": false all three work (the host file is read)" \
		test "$edge" = "signal:ok abstract:ok root:ok"
else
	echo "# scoping across the domain's edge not checked: Landlock ABI $abi < 6 or no nsenter"
fi

PROBE=(nested)
probe
check "a program in the cell stacks a Landlock domain of its own" out_is EACCES

sc run --require-landlock -- true
check "--require-landlock runs where Landlock is" expect_rc 0
sc run --require-landlock --policy "$POL/off.json" -- true
check "--require-landlock with a policy that turns it off: 125" expect_rc 125
check "... with one line that says why" err_has "require-landlock: the policy turns Landlock"
check "... and only one" err_one_line

# A long-lived cell: exec'd commands inherit the domain; cp and commit,
# whose workers run in the cell, still work (commit reads the writable
# layer, which is outside the cell's root: a read rule of its own).
c="ll$$"
sc create -v "$SOCKD:/x" "$c"
check "create a long-lived cell" expect_rc 0
sc exec "$c" -- python3 /x/probe.py read /x/s secret
check "exec in it: the host dir fd opens nothing" out_is EACCES
printf 'in\n' >"$T_WORK/cpin" && chmod 644 "$T_WORK/cpin"
sc cp "$T_WORK/cpin" "$c:/testbed/cpin"
check "cp into the cell" expect_rc 0
sc exec "$c" -- cat /testbed/cpin
check "... arrives" out_is in
sc rm -f "$c"

if [ -x /bin/busybox ]; then
	A="$T_DIR/archives"
	mkdir -p "$A"
	python3 "$SRCDIR/tests/integration/image_tool.py" docker "$A/base.tar"
	chmod -R a+rX "$A"
	sc image import "$A/base.tar" base
	sc create --image base "$c"
	sc exec "$c" -- sh -c 'echo kept >/f'
	sc commit "$c" "llimg$$"
	check "commit reads the writable layer" expect_rc 0
	sc run --image "llimg$$" -- cat /f
	check "... and the image has the file" out_is kept
	sc rm -f "$c"
else
	echo "# commit not checked: /bin/busybox (busybox-static) builds the test image"
fi

finish
