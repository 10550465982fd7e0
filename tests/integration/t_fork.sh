#!/usr/bin/env bash
# sandcell fork, checkpoint, rollback: children whose files equal their
# parent's (every type of entry, whiteouts and opaque directories of the
# image included), each on its own; the parent running on; nothing left
# on the host once the cells are gone.
. "$(dirname "$0")/../lib.sh"

# A hash of every path under the cell's writable places: type, mode,
# owner, size, link target, xattrs, contents (and mtime of non-dirs);
# hard links as the first path of their inode.
HASH='
import hashlib, os, stat, sys
h = hashlib.sha256()
inodes = {}
h.update(repr(os.path.lexists("/etc/hostname")).encode())
for top in ("/testbed", "/root", "/tmp", "/usr/local/share/fk", "/home", "/var/tmp"):
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            rec = [p, stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid]
            if not stat.S_ISDIR(st.st_mode):
                rec += [st.st_size, st.st_mtime_ns]
                if st.st_nlink > 1:
                    rec.append(inodes.setdefault(st.st_ino, p))
            if stat.S_ISLNK(st.st_mode):
                rec.append(os.readlink(p))
            else:
                try:
                    rec += sorted((k, os.getxattr(p, k)) for k in os.listxattr(p))
                except OSError:
                    pass
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    rec.append(hashlib.sha256(f.read()).hexdigest())
            h.update(repr(rec).encode())
print(h.hexdigest())
'
# HASH_OUT: the hash, or "failed: ..." (never equal to a hash)
tree_hash() {
	sc exec "$1" -- python3 -c "$HASH"
	HASH_OUT=$OUT
	[ "$RC" -eq 0 ] && [ ${#OUT} -eq 64 ] || HASH_OUT="failed: $RC $ERR"
}

p="fkp$$"
sc create "$p"
check "the parent cell starts" expect_rc 0
sc exec "$p" -- sh -c '
set -e
head -c 10485760 /dev/urandom >/testbed/big
echo one >/testbed/hl1 && ln /testbed/hl1 /testbed/hl2
mkfifo /testbed/fifo
cp /bin/true /testbed/suid && chmod 4755 /testbed/suid
ln -s big /testbed/link
echo secret >/root/private && chmod 600 /root/private
python3 -c "import os; open(\"/testbed/x\",\"w\").write(\"x\"); os.setxattr(\"/testbed/x\",\"user.k\",b\"v\")"
rm /etc/hostname
mkdir -p /testbed/od/sub && echo a >/testbed/od/a && echo s >/testbed/od/sub/s
mkdir -p /usr/local/share/fk && echo u >/usr/local/share/fk/f
sleep 100000 >/dev/null 2>&1 &
echo $! >/testbed/bgpid'
check "the parent makes every kind of entry" expect_rc 0
tree_hash "$p"
parent_hash=$HASH_OUT
check "the parent's tree hashes" bash -c '[ ${#0} -eq 64 ]' "$parent_hash"

sc fork --json "$p" "fkc1$$" "fkc2$$"
check "fork makes two children" bash -c '[ '$RC' -eq 0 ] && printf "%s" "$0" | python3 -c "
import json,sys; d=json.load(sys.stdin); assert [c[\"ok\"] for c in d[\"children\"]]==[True,True]"' "$OUT"
for c in "fkc1$$" "fkc2$$"; do
	tree_hash "$c"
	check "child $c has the parent's tree (whiteout of an image file, FIFO, hard link, setuid, xattr, 10 MB)" \
		bash -c '[ "$0" = "$1" ]' "$HASH_OUT" "$parent_hash"
done
sc exec "fkc1$$" -- sh -c 'test -e /etc/hostname || echo gone; test -u /testbed/suid && echo suid;
  test -p /testbed/fifo && echo fifo; stat -c %h /testbed/hl1; ps -e -o comm= | grep -c sleep'
check "a child sees the deletion, setuid, FIFO, hard link; no parent process" \
	out_is "$(printf 'gone\nsuid\nfifo\n2\n0')"

sc exec "$p" -- sh -c 'grep "^State:" /proc/$(cat /testbed/bgpid)/status'
check "the parent's background job runs on after the fork" out_has "sleeping"

# in a child, /testbed is an overlay over the parent's layer: a delete
# there is a whiteout, a directory made anew is opaque
sc exec "fkc1$$" -- sh -c 'echo mine >/testbed/new && rm /testbed/hl1 &&
  rm -rf /testbed/od && mkdir /testbed/od && echo only >/testbed/od/only'
check "a child writes and deletes (a whiteout, an opaque directory)" expect_rc 0
tree_hash "$p"
check "the parent does not see the child's changes" bash -c '[ "$0" = "$1" ]' "$HASH_OUT" "$parent_hash"
tree_hash "fkc2$$"
check "the other child does not see them" bash -c '[ "$0" = "$1" ]' "$HASH_OUT" "$parent_hash"
sc exec "fkc1$$" -- sh -c 'cat /testbed/new; ls /testbed/od'
check "the child sees its own changes" out_is "$(printf 'mine\nonly')"

# a fork of a fork stands on both layers: the middle one's whiteout and
# opaque directory keep hiding what they hid
tree_hash "fkc1$$"
child_hash=$HASH_OUT
sc fork "fkc1$$" "fkg$$"
tree_hash "fkg$$"
check "a fork of a fork has its parent's tree" bash -c '[ "$0" = "$1" ]' "$HASH_OUT" "$child_hash"
sc exec "fkg$$" -- sh -c 'cat /testbed/new; test -e /testbed/hl1 || echo nohl; ls /testbed/od; test -e /etc/hostname || echo gone; head -c 3 /testbed/big | wc -c'
check "a fork of a fork: whiteout and opaque dir of the middle layer hold" out_is "$(printf 'mine\nnohl\nonly\ngone\n3')"

sc fork --count 2 "$p"
check "--count names the children NAME-1, NAME-2" out_is "$(printf '%s\n%s' "$p-1" "$p-2")"
sc rm "$p-1" "$p-2"

sc rm -f "$p"
check "the parent is removed" expect_rc 0
sc exec "fkc2$$" -- sh -c 'cat /testbed/hl2 && echo more >>/testbed/hl2 && cat /testbed/hl2'
check "a child works after its parent's rm" out_is "$(printf 'one\none\nmore')"

# writes in flight: pa is written before pb, so a tree of one instant has
# pb <= pa <= pb + 1; a copy of the files one after the other (pa first)
# without holding the cell would see pb ahead of pa
w="fkw$$"
sc create "$w"
sc exec "$w" -- sh -c 'python3 -c "
import os
i = 0
while True:
    i += 1
    for n in (\"pa\", \"pb\"):
        with open(\"/testbed/\" + n + \".t\", \"w\") as f: f.write(str(i))
        os.rename(\"/testbed/\" + n + \".t\", \"/testbed/\" + n)
" >/dev/null 2>&1 &
while [ ! -e /testbed/pb ]; do sleep 0.05; done'
ok=0
for k in 1 2 3 4 5; do
	sc fork "$w" "fkw$k$$"
	sc exec "fkw$k$$" -- sh -c 'echo $(cat /testbed/pa) $(cat /testbed/pb)'
	set -- $OUT
	if [ "$RC" -eq 0 ] && [ $# -eq 2 ] && [ "$2" -le "$1" ] && [ "$1" -le $(($2 + 1)) ]; then
		ok=$((ok + 1))
	else
		echo "fork $k: pa pb = $OUT"
	fi
	sc rm "fkw$k$$"
done
check "five forks of a cell writing two files each see one instant" bash -c '[ '$ok' -eq 5 ]'
sc rm -f "$w"

# checkpoint and rollback
r="fkr$$"
sc create "$r"
sc exec "$r" -- sh -c 'echo v1 >/testbed/f && rm /etc/hostname && mkfifo /testbed/q && sleep 100000 >/dev/null 2>&1 &'
tree_hash "$r"
before=$HASH_OUT
sc checkpoint "$r" t1
check "checkpoint saves the cell's files" out_is t1
sc exec "$r" -- sh -c 'echo v2 >/testbed/f && rm /testbed/q && echo new >/testbed/n && echo h >/etc/hostname'
sc checkpoint ls "$r"
check "checkpoint ls lists the tag" out_is t1
sc rollback "$r" t1
check "rollback succeeds" expect_rc 0
tree_hash "$r"
check "rollback restores the files exactly" bash -c '[ "$0" = "$1" ]' "$HASH_OUT" "$before"
sc exec "$r" -- sh -c 'ps -e -o comm= | grep -c sleep'
check "rollback killed the cell's processes" out_is 0
sc checkpoint "$r" t1
check "a tag is not saved twice" bash -c '[ '$RC' -ne 0 ]'
sc checkpoint rm "$r" t1
sc checkpoint ls "$r"
check "checkpoint rm removes it" out_is ""
sc checkpoint "$r" t2
sc rm -f "$r"

# --replay-sessions: a child's Python session runs the parent's code again
if command -v python3 >/dev/null; then
	s="fks$$"
	sc code session start "$s"
	check "a Python session starts" expect_rc 0
	run_in_session() { printf '%s\n' "$2" >"$T_DIR/run.py" && chmod 644 "$T_DIR/run.py" && sc code session run "$1" "$T_DIR/run.py"; }
	run_in_session "$s" 'x = 40'
	run_in_session "$s" 'x += 2; open("/tmp/seen", "w").write("%d" % x)'
	run_in_session "$s" 'raise ValueError("fails in the parent too")'
	check "a failing run fails in the parent" bash -c '[ '$RC' -ne 0 ]'
	sc fork --json --replay-sessions "$s" "$s-a" "$s-b"
	check "fork --replay-sessions replays every run in each child" bash -c \
		'printf "%s" "$0" | python3 -c "import json,sys; d=json.load(sys.stdin); assert [c[\"replay\"] for c in d[\"children\"]] == [{\"ok\": True, \"runs\": 3}] * 2, d"' "$OUT"
	run_in_session "$s-a" 'print(x)'
	check "a replayed child has the parent's variables" out_is 42
	run_in_session "$s-b" 'x = 0; print(x)'
	run_in_session "$s-a" 'print(x)'
	check "a child's session is its own" out_is 42
	sc fork "$s" "$s-c"
	run_in_session "$s-c" 'print("x" in globals())'
	check "without --replay-sessions a child's session starts empty" out_is False
	# a run that succeeded in the parent fails in the child: reported
	sc exec "$s" -- sh -c 'echo there >/tmp/g'
	run_in_session "$s" 'print(open("/tmp/g").read().strip())'
	sc exec "$s" -- rm /tmp/g
	sc fork --replay-sessions "$s" "$s-d"
	check "a replay that fails makes fork fail" bash -c '[ '$RC' -ne 0 ]'
	check "it names the child and the run" err_has "$s-d: the session's replay failed: run 4 succeeded in the parent"
	check "and says why" err_has "FileNotFoundError"
	sc ps
	check "the child whose replay failed is kept" out_has "^$s-d "
	sc fork --replay-sessions "fkc1$$" "fkn$$"
	check "--replay-sessions of a cell without a session is refused" err_has "has no Python code session"
	sc ps
	check "and no child is made" bash -c '! grep -q "^fkn$$ " <<<"$0"' "$OUT"
	sc rm -f "$s" "$s-a" "$s-b" "$s-c" "$s-d"
fi

sc rm -f "fkc1$$" "fkc2$$" "fkg$$"
check "the children are removed" expect_rc 0
check "no snapshot layer is left under the state root" bash -c '! [ -e "$0/run/.snapshots" ]' "$SANDCELL_ROOT"
check "no mount of sandcell's is left in the host's table" bash -c '! grep -q -- "$0" /proc/self/mountinfo' "$SANDCELL_ROOT"

# gc: a layer left by a killed fork (no users) is removed
sc create "fkk$$"
sc checkpoint "fkk$$" keep
as_user sh -c 'rm -rf "$SANDCELL_ROOT"/run/.snapshots/*/users/*'
sc gc
check "gc removes a layer nobody keeps" bash -c '! [ -e "$0/run/.snapshots" ]' "$SANDCELL_ROOT"

# a layer whose making or removal a kill cut short (named .new-ID or
# .gone-ID meanwhile) is removed by the next fork, and by gc
half() { as_user sh -c 'for d in "$@"; do mkdir -p "$SANDCELL_ROOT/run/.snapshots/$d/tree/root/x"; echo y >"$SANDCELL_ROOT/run/.snapshots/$d/tree/root/x/f"; done' sh "$@"; }
half .new-0123456789abcdef0123456789abcdef .gone-fedcba9876543210fedcba9876543210
sc fork "fkk$$" "fkk2$$"
check "a fork succeeds beside half-made and half-removed layers" expect_rc 0
check "and removes them" bash -c '! ls -A "$0/run/.snapshots" | grep -q "^\."' "$SANDCELL_ROOT"
sc rm -f "fkk$$" "fkk2$$"
half .gone-fedcba9876543210fedcba9876543210
sc gc
check "gc removes a half-removed layer" bash -c '! [ -e "$0/run/.snapshots" ]' "$SANDCELL_ROOT"
finish
