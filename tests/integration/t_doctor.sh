#!/usr/bin/env bash
# sandcell doctor: one line per check, exit 0 when cells can run, --json that
# parses, and the host's cgroup mode named as it is.
. "$(dirname "$0")/../lib.sh"

# What the host's cgroups are, read independently of sandcell.
if grep -q ' - cgroup2 ' /proc/self/mountinfo; then
	if grep -E ' - cgroup cgroup .*(memory|pids|cpu)' /proc/self/mountinfo >/dev/null; then
		host_mode=hybrid
	else
		host_mode=v2
	fi
else
	host_mode=v1
fi
# Which mechanism cells of the test user get, read independently: v2 where
# the v2 hierarchy has memory, pids or cpu; else the v1 hierarchies, for root only.
v1_mounted() { grep -Eq " - cgroup cgroup [^ ]*[,]$1(,|\$)" /proc/self/mountinfo; }
v2_root=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)
if [ -n "$v2_root" ] && grep -Eqw 'memory|pids|cpu' "$v2_root/cgroup.controllers" 2>/dev/null; then
	expect_mech=""  # v2 (delegation decides; tests/vm proves that case)
elif [ "$host_mode" != v2 ] && [ "$T_UID" -eq 0 ] && v1_mounted memory && v1_mounted pids; then
	expect_mech=cgroup-v1
else
	expect_mech=rlimit
fi

# A sandcell root of the test user's own, straight under /tmp.
own_root=$(mktemp -d /tmp/sandcell-doctor.XXXXXX)
chown "$T_UID:$T_UID" "$own_root"
bad_root=$(mktemp -d /tmp/sandcell-doctor-bad.XXXXXX)
chmod 0777 "$bad_root"
trap 'rm -rf "$own_root" "$bad_root"; t_cleanup' EXIT
export SANDCELL_ROOT=$own_root

sc doctor
check "doctor exits 0 (cells can run here)" expect_rc 0
for name in kernel userns overlay cgroup limits seccomp subuid state-dir data-dir; do
	check "a '$name' line" bash -c 'printf "%s\n" "$OUT" | grep -Eq "^'"$name"' +(ok|warn|fail) "' 
done
check "user namespaces work" out_has '^userns  *ok '
check "overlayfs in a user namespace works" out_has '^overlay  *ok '
# (the detail starts with the mode: "hybrid: ...", "v2 at ..."; every
# detail string names v2 somewhere, so a plain grep would prove nothing)
check "the cgroup line names the mode ($host_mode)" \
	bash -c 'printf "%s\n" "$OUT" | grep -Eq "^cgroup +(ok|warn|fail) +$0(:| at )"' "$host_mode"
if [ "$expect_mech" = cgroup-v1 ]; then
	check "root on a $host_mode host: the cgroup line is ok and says cgroup v1" \
		bash -c 'printf "%s\n" "$OUT" | grep -Eq "^cgroup +ok +[a-z0-9]+: cgroup v1 for root callers: memory pids"'
	check "the limits line names the v1 files" \
		bash -c 'printf "%s\n" "$OUT" | grep -Eq "^limits +(ok|warn) +memory: cgroup v1 \(memory.limit_in_bytes.*pids: cgroup v1 \(pids.max\)"'
elif [ "$expect_mech" = rlimit ]; then
	if [ "$host_mode" = hybrid ]; then
		check "a hybrid host gets a warning with a fix" \
			bash -c 'printf "%s\n" "$OUT" | grep "^cgroup " | grep -q "warn .*fix: .*systemd.unified_cgroup_hierarchy=1"'
	fi
	check "the limits line warns that memory and pids are rlimits" \
		bash -c 'printf "%s\n" "$OUT" | grep -Eq "^limits +warn +memory: rlimit \(RLIMIT_AS.*pids: rlimit .* -- fix: "'
fi
check "every non-ok check says what to do" \
	bash -c '! printf "%s\n" "$OUT" | grep -E "^[a-z-]+ +(warn|fail) " | grep -vq "fix: "'
export OUT
# doctor's test cgroup is named after its pid: look for this run's only
# (the other variant's doctor may be running under ctest -j)
as_user_exec "$SC_BIN" doctor >/dev/null 2>&1 </dev/null &
doctor_pid=$!
wait "$doctor_pid"
check "no test cgroup is left behind (doctor-$doctor_pid)" \
	bash -c '! find /sys/fs/cgroup -maxdepth 4 -name "doctor-$0.*" 2>/dev/null | grep -q .' "$doctor_pid"

sc doctor --json
export OUT
check "--json exits 0" expect_rc 0
check "--json parses" bash -c 'printf "%s" "$OUT" | python3 -c "import json,sys; json.load(sys.stdin)"'
check "--json: ok is true and every check has name/status/detail/fix" bash -c 'printf "%s" "$OUT" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"ok\"] is True
assert len(d[\"checks\"]) >= 8
for c in d[\"checks\"]:
    assert set(c) == {\"name\", \"status\", \"detail\", \"fix\"}, c
    assert c[\"status\"] in (\"ok\", \"warn\", \"fail\"), c
"'
check "--json reports the cgroup mode ($host_mode)" bash -c 'printf "%s" "$OUT" | python3 -c "
import json, re, sys
d = json.load(sys.stdin)
c = [c for c in d[\"checks\"] if c[\"name\"] == \"cgroup\"][0]
assert re.match(re.escape(sys.argv[1]) + \"(:| at )\", c[\"detail\"]), c
" '"$host_mode"

if [ -n "$expect_mech" ]; then
	check "--json: limits says $expect_mech for memory and pids" bash -c 'printf "%s" "$OUT" | python3 -c "
import json, sys
l = json.load(sys.stdin)[\"limits\"]
assert set(l) == {\"memory\", \"pids\", \"cpu\"}, l
assert l[\"memory\"] == l[\"pids\"] == sys.argv[1], l
assert l[\"cpu\"] in (\"cgroup-v1\", \"cgroup-v2\", \"rlimit\"), l
" '"$expect_mech"
fi

# A root anybody may write into is not usable: fail, exit 1, with a fix.
SANDCELL_ROOT=$bad_root/x sc doctor
check "a world-writable root: exit 1" expect_rc 1
check "a world-writable root: the state-dir check fails with a fix" out_has '^state-dir  *fail .*fix: '
check "a world-writable root: the summary says cells cannot run" out_has 'cannot run'

sc doctor --bogus
check "an unknown option is a usage error (125)" expect_rc 125
check "with one line on stderr" err_one_line

finish
