#!/usr/bin/env bash
# Long-lived cells: create, exec, cp, ps, rm, gc, as a user would drive them.
. "$(dirname "$0")/../lib.sh"

c="cell$$"
sc create "$c"
check "create prints the name and succeeds" bash -c '[ '$RC' -eq 0 ] && [ "$0" = "'$c'" ]' "$OUT"
sc create "$c"
check "creating the same name again is a one-line 125 error" bash -c '[ '$RC' -eq 125 ] && grep -q "already exists" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc create "bad/name"
check "a bad name is refused" expect_rc 125
sc create "$(printf 'bad\nname')"
check "a name with a newline is refused in one line" bash -c '[ '$RC' -eq 125 ] && [ "$(grep -c . <<<"$0")" -eq 1 ] && grep -q "bad?name" <<<"$0"' "$ERR"
sc create -- "dash$$"
check "create -- NAME takes the name" bash -c '[ '$RC' -eq 0 ] && [ "$0" = "dash'$$'" ]' "$OUT"
sc rm "dash$$"
# a lifted limit shows as unlimited, an age is never negative
sc create --memory 0 --pids 0 "unl$$"
sc ps --json
check "ps --json shows lifted limits as null and no negative age" bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
d = [x for x in json.load(sys.stdin) if x[\"name\"] == \"unl'$$'\"][0]
assert d[\"limits\"][\"memory\"] is None and d[\"limits\"][\"pids\"] is None, d
assert d[\"age_s\"] >= 0, d"' "$OUT"
sc ps
check "ps shows lifted limits as unlimited" bash -c 'grep -q "^unl'$$' .*unlimited *unlimited" <<<"$0" && ! grep -q -- " -[0-9]*s " <<<"$0"' "$OUT"
sc rm "unl$$"
# a cell with the default limits shows the limits it has: 1024 processes,
# and 4G of memory where a cgroup holds it (rlimits hold none by default)
sc doctor --json
mem_mech=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"]["memory"])')
case "$mem_mech" in
cgroup-v1 | cgroup-v2) want_mem=4294967296 want_mem_text=4G ;;
*) want_mem=None want_mem_text=unlimited ;;
esac
sc create "dfl$$"
sc ps --json
check "ps --json shows the default limits the cell has ($mem_mech: memory $want_mem, pids 1024)" \
	bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
d = [x for x in json.load(sys.stdin) if x[\"name\"] == \"dfl'$$'\"][0]
assert d[\"limits\"][\"memory\"] == '$want_mem' and d[\"limits\"][\"pids\"] == 1024, d"' "$OUT"
sc ps
check "ps shows them too ($want_mem_text, 1024)" \
	bash -c 'grep -q "^dfl'$$' .* '$want_mem_text' *1024 " <<<"$0"' "$OUT"
sc rm "dfl$$"

# --- exec ---
sc exec "$c" -- sh -c 'echo hello; echo oops >&2; exit 3'
check "exec passes stdout and the status" bash -c '[ '$RC' -eq 3 ] && [ "$0" = hello ]' "$OUT"
check "exec passes stderr" err_has oops
sc exec "$c" -- sh -c 'kill -TERM $$'
check "exec: killed by a signal gives 128+N" expect_rc 143
# init ignores SIGPIPE; an ignored disposition survives exec: the command
# must start with every signal at its default (the writer dies, 141)
sc exec "$c" -- sh -c '{ yes; echo "yes=$?" >&2; } | head -n1 >/dev/null'
check "exec: a writer to a closed pipe dies of SIGPIPE" err_has "yes=141"
# a cell created by a caller that ignores signals: its commands ignore none
trap '' HUP USR1 RTMIN+3
sc create "ign$$"
trap - HUP USR1 RTMIN+3
sc exec "ign$$" -- grep SigIgn /proc/self/status
check "exec: the command ignores no signal even when the cell's creator ignored some" out_is "$(printf 'SigIgn:\t0000000000000000')"
sc rm -f "ign$$"
# the cell's init keeps none of its creator's fds (a shell's, or an API
# server's listener and clients): it never execs, so CLOEXEC does not help
# (at most 9 of its own: one is the writable state it keeps for fork, two
# its own user and network namespaces, kept for a renewal)
printf marker >"$T_DIR/fdmark.$$"
chmod 644 "$T_DIR/fdmark.$$"
exec 7<"$T_DIR/fdmark.$$"
o=$(as_user sh -c 'ls -l /proc/$$/fd')
sc create "fds$$"
exec 7<&-
pid=$(as_user "$SC_BIN" ps --json | python3 -c 'import json,sys; print([x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]][0]["pid"])' "fds$$")
f=$(ls -l "/proc/$pid/fd" 2>&1)
check "the creator's fds reach the create command (the check below can fail)" grep -q fdmark <<<"$o"
check "a long-lived cell's init keeps none of its creator's fds" bash -c '[ -n "$1" ] && ! grep -q fdmark <<<"$0" && ! grep -q "No such" <<<"$0" && [ "$(grep -c -- "->" <<<"$0")" -le 9 ]' "$f" "$pid"
sc rm -f "fds$$"
sc exec "$c" -- /no/such/cmd
check "exec: not found gives 127" expect_rc 127
sc exec "$c" -- /etc/hostname
check "exec: not executable gives 126" expect_rc 126
sc exec "$c" -- sh -c 'echo persisted > /testbed/state.txt'
sc exec "$c" -- cat /testbed/state.txt
check "files persist between commands" out_is persisted
o=$(printf 'piped\n' | as_user "$SC_BIN" exec -i "$c" -- cat)
RC=$?
check "exec -i passes stdin" bash -c '[ "$0" -eq 0 ] && [ "$1" = piped ]' "$RC" "$o"
o=$(printf 'piped\n' | as_user "$SC_BIN" exec "$c" -- cat)
RC=$?
check "without -i stdin is empty" bash -c '[ "$0" -eq 0 ] && [ -z "$1" ]' "$RC" "$o"
sc exec -e FOO=bar -w /tmp "$c" -- sh -c 'echo $FOO; pwd; echo $PATH'
check "-e and -w apply" bash -c '[ "$(sed -n 1p <<<"$0")" = bar ] && [ "$(sed -n 2p <<<"$0")" = /tmp ] && grep -q /usr/bin <<<"$0"' "$OUT"
sc exec --timeout 1 "$c" -- sleep 30
check "exec --timeout gives 124" expect_rc 124
# milliseconds once wrapped at 32 bits (8589934.6 s became 8 ms) and a
# sub-millisecond timeout became none
sc exec --timeout 8589934.6 "$c" -- sleep 1
check "exec --timeout past 2^32 ms does not wrap" expect_rc 0
sc exec --timeout 0.0009 "$c" -- sleep 30
check "exec --timeout under 1 ms still fires" expect_rc 124
sc exec "$c" -- echo alive
check "the cell lives on after a timed-out command" out_is alive
sc exec --json "$c" -- sh -c 'echo j; exit 2'
check "exec --json prints a result object" bash -c '[ "$(json_field exit_code)" = 2 ] && [ "$(json_field stdout)" = j ]'
sc exec nosuchcell$$ -- true
check "exec into a never-created cell is a one-line 125 error" bash -c '[ '$RC' -eq 125 ] && [ "$(grep -c . <<<"$0")" -eq 1 ] && grep -q "no cell named" <<<"$0"' "$ERR"

# --- 100 concurrent execs ---
pids=()
for i in $(seq 1 100); do
	as_user "$SC_BIN" exec "$c" -- sh -c "echo out-$i; exit $((i % 7))" >"$T_DIR/par.$i" 2>&1 &
	pids+=($!)
done
bad=0
for i in $(seq 1 100); do
	wait "${pids[$((i - 1))]}"
	rc=$?
	[ "$rc" -eq $((i % 7)) ] && [ "$(cat "$T_DIR/par.$i")" = "out-$i" ] || bad=$((bad + 1))
done
RC=$bad OUT="" ERR=""
check "100 concurrent execs all complete with the right output and status" [ "$bad" -eq 0 ]

# --- a client that disconnects takes its command with it ---
marker="sleep 7373.$$"
as_user_exec "$SC_BIN" exec "$c" -- sh -c "$marker" </dev/null >/dev/null 2>&1 &
client=$!
for _ in $(seq 600); do has_command "$marker" && break; sleep 0.1; done
check "the command runs" has_command "$marker"
kill -KILL "$client"
wait "$client" 2>/dev/null
for _ in $(seq 600); do no_process_with "$marker" && break; sleep 0.1; done
check "killing the client kills its command" no_process_with "$marker"

# --- cp ---
src="$T_WORK/src"
mkdir -p "$src/sub"
echo top >"$src/a.txt"
echo deep >"$src/sub/b.txt"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$src"
sc cp "$src" "$c:/testbed/"
check "cp a directory into the cell" expect_rc 0
sc exec "$c" -- cat /testbed/src/a.txt /testbed/src/sub/b.txt
check "the copied files are there" out_is "$(printf 'top\ndeep')"
sc exec "$c" -- sh -c 'mkdir -p /testbed/output && echo result > /testbed/output/r.txt && chmod 4755 /testbed/output/r.txt && ln -s /etc/shadow /testbed/output/evil && ln -s /etc /testbed/etclink'
out="$T_WORK/out"
mkdir -p "$out"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$out"
sc cp "$c:/testbed/output" "$out/"
check "cp a directory out of the cell" bash -c '[ '$RC' -eq 0 ] && [ "$(cat "$0/output/r.txt")" = result ]' "$out"
check "a symlink out of the tree planted by the cell is left out by default" bash -c '[ ! -e "$0/output/evil" ] && [ ! -L "$0/output/evil" ]' "$out"
check "leaving out links says so in one line" bash -c 'grep -q "left out 1 symlink .*evil -> /etc/shadow.*--keep-links" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
check "setuid bits are dropped on the way out" bash -c '[ ! -u "$0/output/r.txt" ]' "$out"
mkdir -p "$out/kept"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$out/kept"
sc cp --keep-links "$c:/testbed/output" "$out/kept/"
check "--keep-links: a symlink planted by the cell comes out as a symlink, never followed" bash -c '[ -L "$0/kept/output/evil" ] && [ "$(readlink "$0/kept/output/evil")" = /etc/shadow ]' "$out"
sc cp --keep-links "$c:/testbed/etclink" "$out/etc-copy"
check "copying out a path that is a symlink in the cell copies the link, not its target" bash -c '[ -L "$0/etc-copy" ] && [ "$(readlink "$0/etc-copy")" = /etc ]' "$out"
sc cp "$c:/testbed/etclink" "$out/etc-copy2"
check "a top entry that is a link out is left out by default" bash -c '[ '$RC' -eq 0 ] && [ ! -L "$0/etc-copy2" ]' "$out"
# links that stay inside the copied tree are kept; every way out is dropped
sc exec "$c" -- sh -c 'mkdir -p /testbed/lk/sub && cd /testbed/lk && echo x > x && ln -s x in1 && ln -s ../x sub/in2 && ln -s ./sub/../x odd && ln -s ../../../../root up && ln -s .. up1 && ln -s sub/../.. up2 && ln -s /testbed/lk/x abs && ln -s . self && ln -s self/self/../.. up3'
sc cp "$c:/testbed/lk" "$out/lk"
check "links inside the copied tree are kept" bash -c '[ "$(cat "$0/lk/in1")" = x ] && [ "$(cat "$0/lk/sub/in2")" = x ] && [ -L "$0/lk/self" ]' "$out"
check "links that are absolute or leave the tree are left out" bash -c 'for l in up up1 up2 abs up3 odd; do [ ! -L "$0/lk/$l" ] || exit 1; done' "$out"
check "the note counts every link left out" err_has "left out 6 symlinks"
victim="$T_WORK/victim"
echo untouched >"$victim"
mkdir -p "$out/trap/output"
ln -s "$victim" "$out/trap/output/r.txt"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$out/trap" "$victim"
sc cp "$c:/testbed/output" "$out/trap/"
check "a symlink already at the host destination is never written through" bash -c '[ '$RC' -eq 125 ] && [ "$(cat "$0")" = untouched ]' "$victim"
sc exec "$c" -- sh -c 'head -c 3000000 /dev/zero > /testbed/big'
sc cp --max-size 1M "$c:/testbed/big" "$out/big"
check "--max-size bounds a copy" expect_rc 125
# A FIFO the cell put in the way must not hang the copy (timeout: a
# backstop so that a hang fails the check instead of the suite)
sc exec "$c" -- mkfifo /testbed/fifo
echo data >"$T_WORK/plain"
chmod 644 "$T_WORK/plain"
ERR=$(as_user timeout 120 "$SC_BIN" cp "$T_WORK/plain" "$c:/testbed/fifo" 2>&1 >/dev/null </dev/null)
RC=$?
check "copy-in onto a FIFO fails at once, saying why" bash -c '[ '$RC' -eq 125 ] && grep -q FIFO <<<"$0"' "$ERR"
# copy-out leaves out FIFOs and devices, one line each
sc exec "$c" -- sh -c 'mkdir -p /testbed/sp && echo k > /testbed/sp/keep && mkfifo /testbed/sp/pipe'
sc cp "$c:/testbed/sp" "$out/sp"
check "copy-out names a FIFO it leaves out" bash -c '[ '$RC' -eq 0 ] && [ "$(cat "$1/sp/keep")" = k ] && [ ! -e "$1/sp/pipe" ] && [ "$(grep -c "left out sp/pipe: a FIFO" <<<"$0")" -eq 1 ]' "$ERR" "$out"
# The same FIFO swapped in under a copy while it runs: the cell renames a
# FIFO and a regular file over /testbed/race/f in a loop (the check-then-
# open race that once hung copy-out ~1 in 80). Every copy must end (the
# 120 s timeout is a backstop: 124 means a hang), either with the file or
# refused, never hung on the FIFO.
sc exec "$c" -- sh -c 'mkdir -p /testbed/race && (exec python3 -c "
import os, time
os.chdir(\"/testbed/race\")
end = time.monotonic() + 300
while not os.path.exists(\"stop\") and time.monotonic() < end:
    os.mkfifo(\"p\"); os.rename(\"p\", \"f\")
    with open(\"r\", \"w\") as w: w.write(\"reg\")
    os.rename(\"r\", \"f\")
" </dev/null >/dev/null 2>&1 &)'
race_rcs=""
for i in $(seq 1 40); do
	as_user timeout 120 "$SC_BIN" cp "$c:/testbed/race/f" "$T_WORK/race-out-$i" </dev/null >/dev/null 2>&1
	race_rcs="$race_rcs $?"
	as_user timeout 120 "$SC_BIN" cp "$T_WORK/plain" "$c:/testbed/race/f" </dev/null >/dev/null 2>&1
	race_rcs="$race_rcs $?"
done
sc exec "$c" -- touch /testbed/race/stop
check "40 copy-outs and 40 copy-ins while the cell swaps a FIFO in: none hangs (rcs:$race_rcs)" \
	bash -c 'for r in $0; do [ "$r" = 0 ] || [ "$r" = 125 ] || exit 1; done' "$race_rcs"
check "a copy-out that won the race has a regular file's content (the swapper's or the copy-in's)" \
	bash -c 'for f in "$0"/race-out-*; do [ -e "$f" ] || continue; [ -f "$f" ] || exit 1; case $(cat "$f") in reg|data) ;; *) exit 1;; esac; done' "$T_WORK"
# Copy-in drops setuid/setgid/sticky bits (README)
echo s >"$T_WORK/suid"
chmod 6755 "$T_WORK/suid"
mkdir -p "$T_WORK/stickyd"
chmod 1777 "$T_WORK/stickyd"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$T_WORK/suid" "$T_WORK/stickyd"
sc cp "$T_WORK/suid" "$c:/testbed/suid"
sc cp "$T_WORK/stickyd" "$c:/testbed/stickyd"
sc exec "$c" -- stat -c %a /testbed/suid /testbed/stickyd
check "copy-in drops setuid, setgid and sticky bits" out_is "$(printf '755\n777')"
# A sparse file over the limit: the message says so
truncate -s 5G "$T_WORK/sparse"
chmod 644 "$T_WORK/sparse"
sc cp "$T_WORK/sparse" "$c:/testbed/sparse"
check "a file over the copy limit is named as over the limit" bash -c '[ '$RC' -eq 125 ] && grep -q "exceeds the size limit" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
rm -f "$T_WORK/sparse"
# A copy that fills the cell's disk leaves no partial file behind
sm="small$$"
sc create --disk 1M "$sm"
head -c 3000000 /dev/zero >"$T_WORK/three"
chmod 644 "$T_WORK/three"
sc cp "$T_WORK/three" "$sm:/testbed/three"
check "a copy onto a full disk fails" bash -c '[ '$RC' -eq 125 ] && grep -qi "space" <<<"$0"' "$ERR"
sc exec "$sm" -- test -e /testbed/three
check "and leaves no partial file in the cell" expect_rc 1
sc rm -f "$sm"

# --- ps ---
sc ps
check "ps lists the cell as running" bash -c 'grep -q "^'$c' .*running" <<<"$0"' "$OUT"
sc ps --json
check "ps --json parses and has the cell" bash -c 'printf "%s" "$0" | python3 -c "import json,sys; d=json.load(sys.stdin); assert any(x[\"name\"]==\"'$c'\" and x[\"state\"]==\"running\" for x in d)"' "$OUT"

# --- rm ---
as_user "$SC_BIN" exec "$c" -- sleep 30 </dev/null >/dev/null 2>&1 &
busy=$!
# until the cell runs that command (at most ~10 s)
running_commands() {
	sc ps --json
	printf '%s' "$OUT" | python3 -c 'import json,sys; print([x["running_commands"] for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0])' "$1" 2>/dev/null
}
for _ in $(seq 600); do [ "$(running_commands "$c")" = 1 ] && break; sleep 0.1; done
sc rm "$c"
check "rm refuses a busy cell without -f" bash -c '[ '$RC' -eq 125 ] && grep -q busy <<<"$0"' "$ERR"
sc rm -f "$c"
check "rm -f removes a busy cell" expect_rc 0
wait "$busy" 2>/dev/null
check "its state directory is gone" test ! -e "$SANDCELL_ROOT/run/$c"
sc exec "$c" -- true
check "exec into a removed cell is a 125 error" expect_rc 125

# --- a cell whose init dies: ps shows it gone, gc cleans up ---
d="dead$$"
sc create "$d"
sc ps --json
pid=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([x["pid"] for x in json.load(sys.stdin) if x["name"]=="'$d'"][0])')
kill -KILL "$pid"
for _ in $(seq 600); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
sc ps
check "ps shows a cell whose init died as gone" bash -c 'grep -q "^'$d' .*gone" <<<"$0"' "$OUT"
sc exec "$d" -- true
check "exec into it says it is gone" bash -c '[ '$RC' -eq 125 ] && grep -q gone <<<"$0"' "$ERR"
sc gc
check "gc removes it" bash -c '[ '$RC' -eq 0 ] && [ ! -e "$SANDCELL_ROOT/run/'$d'" ]'

# --- a cell whose state directory was deleted by hand: gc finds its init ---
o1="orphan$$" live="live$$"
sc create "$o1"
sc create "$live"
opid=$(sed -n 's/^pid=//p' "$SANDCELL_ROOT/run/$o1/info")
lpid=$(sed -n 's/^pid=//p' "$SANDCELL_ROOT/run/$live/info")
check "the cells' inits are known" bash -c '[ -n "$0" ] && [ -d "/proc/$0" ] && [ -n "$1" ]' "$opid" "$lpid"
rm -rf "$SANDCELL_ROOT/run/$o1"
sc gc
check "gc says it removed the orphan" bash -c '[ '$RC' -eq 0 ] && grep -q "removed 1 " <<<"$0"' "$OUT"
gone() { [ ! -d "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
for _ in $(seq 600); do gone "$opid" && break; sleep 0.1; done
check "the orphaned init is killed" gone "$opid"
check "gc removed the orphan's cgroups as well (none named $o1 is left)" \
	bash -c '[ -z "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$0.*" 2>/dev/null)" ]' "$o1"
check "a live cell's init is left alone" bash -c '[ -d "/proc/$0" ] && ! grep -q "^State:.*Z" "/proc/$0/status"' "$lpid"
sc exec "$live" -- true
check "... and the live cell still works" expect_rc 0
sc gc
check "a second gc finds nothing more" bash -c '[ '$RC' -eq 0 ] && grep -q "removed 0 " <<<"$0"' "$OUT"
sc rm "$live"

# --- two state roots may hold cells of one name (their cgroups do not meet) ---
twin="twin$$"
root2="$T_WORK/root2"
sc create "$twin"
check "a cell in the first root" expect_rc 0
SANDCELL_ROOT="$root2" sc create "$twin"
check "a cell of the same name in a second root (stderr: $ERR)" expect_rc 0
SANDCELL_ROOT="$root2" sc exec "$twin" -- cat /proc/self/cgroup
check "the second one runs commands" expect_rc 0
SANDCELL_ROOT="$root2" sc rm -f "$twin"
check "the second one is removed" expect_rc 0
sc exec "$twin" -- true
check "the first one is untouched by the second's removal" expect_rc 0
sc rm -f "$twin"

# --- persistent writable layer ---
p="pers$$"
sc create --persist "$p"
sc exec "$p" -- sh -c 'echo on-disk > /testbed/keep.txt'
check "a --persist cell keeps its layer on disk" bash -c 'grep -rq on-disk "$SANDCELL_ROOT/data/cells/'$p'"'
sc rm "$p"
check "rm removes the on-disk layer" test ! -e "$SANDCELL_ROOT/data/cells/$p"

# --- another user cannot exec into your cell ---
# Through the socket itself: every directory opened up and the socket made
# world-writable, another host user sends a well-formed exec request (no
# client-side check in the way). For a root caller's cell every host uid
# outside its range looks the same to the init (the overflow uid), so only
# the token (0600, the creator's) can turn it away.
o="own$$"
sc create "$o"
if [ "$SANDCELL_TEST_AS" = root ]; then other=65534; else other=65533; fi
chmod 755 "$SANDCELL_ROOT" "$SANDCELL_ROOT/run" "$SANDCELL_ROOT/run/$o"
chmod 777 "$SANDCELL_ROOT/run/$o/sock"
check "the info file holding the token is the creator's alone" bash -c '[ "$(stat -c %a "$0")" = 600 ] && grep -qE "^token=[0-9a-f]{64}$" "$0"' "$SANDCELL_ROOT/run/$o/info"
# (note: create's options, for fork and rollback, 0600 too)
check "... and no other file in the cell's directory holds it" bash -c '[ "$(ls "$0" | grep -vx note)" = "$(printf "info\nsock")" ] && ! grep -q token= "$0/note"' "$SANDCELL_ROOT/run/$o"
r=$(setpriv --reuid=$other --regid=$other --clear-groups env -i PATH=/usr/bin:/bin cat "$SANDCELL_ROOT/run/$o/info" 2>&1)
RC=$? OUT=$r
check "another user cannot read the token" bash -c '[ '$RC' -ne 0 ] && [ -z "$(grep -E "[0-9a-f]{64}" <<<"$0")" ]' "$r"
# The header as runtime/proto.h lays it out: kind, argc, envc, flags,
# timeout_ms, max_size, data_len, pad, token[32], uid, gid (all zero here); then
# the strings; the three fds go with it. The reply's text starts at 40.
raw_exec() {
	setpriv --reuid=$other --regid=$other --clear-groups env -i PATH=/usr/bin:/bin /usr/bin/python3 -c '
import os, socket, struct, sys
argv = [b"/bin/sh", b"-c", b"echo pwned > /testbed/pwned"]
data = b"".join(a + b"\0" for a in argv) + b"\0"
hdr = struct.pack("=IIIIQQII32sII", 1, len(argv), 0, 0, 0, 0, len(data), 0, b"\0" * 32, 0, 0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
fds = [os.open("/dev/null", os.O_RDWR) for _ in range(3)]
try:
    s.sendmsg([hdr + data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", *fds))])
except (BrokenPipeError, ConnectionResetError):
    pass  # turned away at accept: the answer is already here
r = s.recv(512)
print(struct.unpack("=I", r[:4])[0], r[40:].split(b"\0")[0].decode())' "$SANDCELL_ROOT/run/$o/sock" 2>&1
}
r=$(raw_exec)
RC=$? OUT=$r
check "another user's exec request through the socket is refused" bash -c '[ '$RC' -eq 0 ] && grep -q "^2 .*another user" <<<"$0"' "$r"
sc exec "$o" -- test -e /testbed/pwned
check "and nothing ran in the cell" expect_rc 1
if [ "$SANDCELL_TEST_AS" = root ]; then
	r=$(setpriv --reuid=65534 --regid=65534 --clear-groups env -i SANDCELL_ROOT="$SANDCELL_ROOT" "$SC_BIN" exec "$o" -- true 2>&1)
	RC=$? ERR=$r
	check "sandcell exec as another user is a 125 error" expect_rc 125
fi
chmod 700 "$SANDCELL_ROOT" "$SANDCELL_ROOT/run/$o"
sc rm "$o"
check "nothing is left in the state root" bash -c '[ -z "$(ls -A "$SANDCELL_ROOT/run")" ]'

finish
