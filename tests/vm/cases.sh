#!/bin/sh
# The cgroup v2 cases, run inside the VM of scripts/vm-test.sh (busybox sh, no
# python): once as root, once as an unprivileged user with a delegated subtree.
# Usage: cases.sh WHO CGBASE   (CGBASE: where sandcell puts sandcell/<cell>)
# Every result is one line "@@SCVM@@ RESULT WHO CASE PASS|FAIL detail".
who=$1
cgbase=$2
M=@@SCVM@@
export PATH=/usr/bin:/usr/sbin

result() { echo "$M RESULT $who $1 $2 $3"; }
info() { echo "$M INFO $who $*"; }
json_num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }
json_str() { sed -n "s/.*\"$1\":\"\{0,1\}\([a-z]*\).*/\1/p" "$2"; }

# Cells' cgroups left in the hierarchy (sandcell-self is sandcell's own leaf).
leftovers() {
	for d in "$cgbase"/sandcell/*/; do
		[ -d "$d" ] || continue
		case "$d" in */sandcell-self/) continue ;; esac
		printf '%s ' "$d"
	done
}
check_gone() {
	left=$(leftovers)
	if [ -z "$left" ]; then
		result "$1-cgroup-removed" PASS ""
	else
		result "$1-cgroup-removed" FAIL "left: $left"
	fi
}

info "uid $(id -u), cgroup $(sed -n 's/^0:://p' /proc/self/cgroup)"

# --- doctor: pure cgroup v2 with the controllers delegated ---
sandcell doctor >/tmp/doctor.$who 2>&1
rc=$?
sed "s/^/$M INFO $who doctor: /" /tmp/doctor.$who
cgline=$(grep -i '^ *cgroup' /tmp/doctor.$who | head -n1)
# (the detail starts with the mode; "v2" alone is in every detail string)
if [ $rc -eq 0 ] && echo "$cgline" | grep -Eq '^ *cgroup +ok +v2 at ' &&
	echo "$cgline" | grep -q 'memory pids cpu'; then
	result doctor PASS "$cgline"
else
	result doctor FAIL "exit $rc: $cgline"
fi

# --- a plain cell works at all ---
out=$(sandcell run -- echo hello 2>/tmp/err.$who)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = hello ]; then
	result smoke PASS ""
else
	result smoke FAIL "exit $rc, out '$out', err '$(head -c 300 /tmp/err.$who)'"
fi
check_gone smoke

# --- a memory bomb under --memory 64M is OOM-killed and reported ---
sandcell run --json --memory 64M -- memhog >/tmp/mem.$who 2>/tmp/err.$who
rc=$?
hit=$(json_str limit_hit /tmp/mem.$who)
peak=$(json_num peak_memory /tmp/mem.$who)
# memhog's own count of the MiB it touched (its last complete line on
# stderr, which --json carries as "stderr"), not sandcell's report alone:
# between half the limit and the limit.
got=$(sed -n 's/.*"stderr":"\([0-9n\\]*\)".*/\1/p' /tmp/mem.$who | sed 's/[0-9]*$//; s/\\n/ /g' | awk '{print $NF}')
# A global OOM kill (no limit at all) would also say limit_hit memory: the
# peak must stay within the 64M.
if [ $rc -eq 137 ] && [ "$hit" = memory ] && [ "${peak:-0}" -gt 0 ] &&
	[ "$peak" -le 67108864 ] && [ "${got:-0}" -ge 32 ] && [ "$got" -le 64 ]; then
	result memory PASS "exit 137, limit_hit memory, peak_memory $peak, memhog touched $got MiB"
else
	result memory FAIL "exit $rc, limit_hit '$hit', peak_memory '$peak', memhog touched '$got' MiB, json '$(head -c 300 /tmp/mem.$who)', err '$(tail -c 300 /tmp/err.$who)'"
fi
check_gone memory
out=$(sandcell run -- echo alive 2>&1)
if [ "$out" = alive ]; then
	result after-oom PASS "a new cell runs"
else
	result after-oom FAIL "'$out'"
fi

# --- the cell cannot reach its own limits to raise them ---
out=$(sandcell run --memory 64M --pids 64 -- cgpeek 2>&1)
rc=$?
if [ $rc -eq 0 ] && ! echo "$out" | grep -q RAISED; then
	result limits-private PASS "$(echo "$out" | tr '\n' ';')"
else
	result limits-private FAIL "exit $rc: $(echo "$out" | tr '\n' ';')"
fi
check_gone limits-private
# The same without the seccomp filter, which stops cgpeek at its first
# unshare above: the nested user + cgroup namespace and the cgroup2 mount
# must be tried, and the limits hold even so.
echo '{"description": "vm test: seccomp allows everything", "seccomp": {"default_action": "allow"}}' >/tmp/permissive.$who.json
out=$(sandcell run --policy /tmp/permissive.$who.json --memory 64M --pids 64 -- cgpeek 2>&1)
rc=$?
if [ $rc -eq 0 ] && ! echo "$out" | grep -q RAISED && echo "$out" | grep -Eq 'mount cgroup2|mounted cgroup2'; then
	result limits-private-nofilter PASS "$(echo "$out" | tr '\n' ';')"
else
	result limits-private-nofilter FAIL "exit $rc (the cgroup2 mount must be tried): $(echo "$out" | tr '\n' ';')"
fi
check_gone limits-private-nofilter

# --- a fork bomb under --pids 32 is held at 32 and ends on --timeout ---
sandcell run --json --pids 32 --timeout 6 -- forkbomb >/tmp/pids.$who 2>/tmp/err.$who &
pid=$!
maxseen=0
while kill -0 $pid 2>/dev/null; do
	for f in "$cgbase"/sandcell/*/pids.current; do
		[ -r "$f" ] || continue
		n=$(cat "$f" 2>/dev/null)
		[ -n "$n" ] && [ "$n" -gt "$maxseen" ] && maxseen=$n
	done
	sleep 0.2
done
wait $pid
rc=$?
hit=$(json_str limit_hit /tmp/pids.$who)
if [ $rc -eq 124 ] && [ "$maxseen" -eq 32 ]; then
	result pids PASS "exit 124, pids.current peaked at $maxseen, limit_hit $hit"
else
	result pids FAIL "exit $rc, pids.current peaked at $maxseen, json '$(head -c 300 /tmp/pids.$who)', err '$(head -c 300 /tmp/err.$who)'"
fi
check_gone pids

# --- a busy loop under --cpus 0.5 gets about half a core ---
ratio() { awk -v c="$1" -v w="$2" 'BEGIN { if (w > 0) printf "%.2f", c / w; else print "0" }'; }
sandcell run --json -- spin 3 >/tmp/cpu1.$who 2>/tmp/err.$who
free_ratio=$(ratio "$(json_num cpu_s /tmp/cpu1.$who)" "$(json_num wall_s /tmp/cpu1.$who)")
info "unlimited busy loop: cpu_s/wall_s = $free_ratio"
sandcell run --json --cpus 0.5 -- spin 4 >/tmp/cpu.$who 2>/tmp/err.$who
rc=$?
cpu=$(json_num cpu_s /tmp/cpu.$who)
wall=$(json_num wall_s /tmp/cpu.$who)
r=$(ratio "$cpu" "$wall")
# the unlimited control must get more than the window allows, else the
# window proves nothing
if [ $rc -eq 0 ] && awk -v r="$r" -v f="$free_ratio" 'BEGIN { exit !(r >= 0.3 && r <= 0.7 && f > 0.7) }'; then
	result cpus PASS "cpu_s $cpu / wall_s $wall = $r (unlimited: $free_ratio)"
else
	result cpus FAIL "exit $rc, cpu_s $cpu / wall_s $wall = $r, err '$(head -c 300 /tmp/err.$who)'"
fi
check_gone cpus

# --- a server's pool renews a cell (cell_renew): the new init goes into
# the cell's own cgroup leaf, the memory limit a request set goes back to
# the server's, and nothing of the request before is left ---
tok=vm-renew-token-$$
echo "$tok" >/tmp/tok.$who
rm -f /tmp/port.$who
sandcell serve --listen 127.0.0.1:0 --token-file /tmp/tok.$who --port-file /tmp/port.$who \
	--pool 1 --memory 64M >/tmp/serve.$who 2>&1 &
spid=$!
i=0
while [ ! -s /tmp/port.$who ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
port=$(cat /tmp/port.$who 2>/dev/null)
post() {
	wget -q -O - --header "Authorization: Bearer $tok" --header "Content-Type: application/json" \
		--post-data "$2" "http://127.0.0.1:$port$1" 2>&1
}
delete() { printf 'DELETE %s HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$1" "$tok" | nc 127.0.0.1 "$port" 2>&1; }
cell_id() { sed -n 's/.*"id":"\([^"]*\)".*/\1/p'; }
renewals() { sandcell ps --json | grep -o '"renewals":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'; }
limits() { cat "$cgbase"/sandcell/serve-*/memory.max 2>/dev/null | sort | tr '\n' ' '; }
id=$(post /cells '{"memory_limit_MB": 32}' | cell_id)
out=$(post "/cells/$id/exec" '{"cmd": "echo left >/tmp/trace; (sleep 1000 &); echo started"}')
set_limits=$(limits)
delete "/cells/$id" >/tmp/del.$who
i=0
while [ "$(renewals)" -lt 1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
n=$(renewals)
back_limits=$(limits)
# the cells of the pool (two: one made when the first was kept) in turn
seen=""
for k in 1 2; do
	id=$(post /cells '{}' | cell_id)
	seen="$seen $(post "/cells/$id/exec" '{"cmd": "cat /tmp/trace 2>/dev/null; pidof sleep; echo end"}' |
		sed -n 's/.*"stdout":"\([^"]*\)".*/\1/p')"
	delete "/cells/$id" >/dev/null
done
procs=$(cat "$cgbase"/sandcell/serve-*/cell/cgroup.procs 2>/dev/null | wc -l)
if [ -n "$port" ] && echo "$out" | grep -q started && [ "$n" -ge 1 ] &&
	echo "$set_limits" | grep -q 33554432 && ! echo "$back_limits" | grep -q 33554432 &&
	echo "$back_limits" | grep -q 67108864 && ! echo "$seen" | grep -q left &&
	[ "$(echo "$seen" | grep -o 'end' | wc -l)" -eq 2 ] && ! echo "$seen" | grep -q '[0-9]\\nend' &&
	[ "$procs" -ge 1 ]; then
	result renew PASS "renewals $n, memory.max $set_limits-> $back_limits, next cells: $seen"
else
	result renew FAIL "port '$port', exec '$(echo "$out" | head -c 200)', renewals '$n', memory.max '$set_limits' -> '$back_limits', next cells '$seen', inits in leaves $procs, serve '$(tail -c 300 /tmp/serve.$who)'"
fi
kill -TERM $spid
wait $spid
check_gone renew
