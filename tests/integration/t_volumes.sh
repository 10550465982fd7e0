#!/usr/bin/env bash
# Named volumes: a directory that outlives cells, mounted by several at
# once (each cell's root may write it), capped in size, refused for
# removal while a live cell mounts it, and gone without a trace after rm.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

V=tv$$
VC=tvcap$$
A=tva$$
B=tvb$$
# a failed check must not leave a loop mount (root) behind
trap 'as_user "$SC_BIN" rm -f "$A" "$B" >/dev/null 2>&1; as_user "$SC_BIN" volume rm "$V" "$VC" >/dev/null 2>&1; t_cleanup' EXIT

sc volume create --size 64M "$V"
check "volume create prints the name" [ "$RC" -eq 0 ] && [ "$OUT" = "$V" ]
sc volume create "$V"
check "a second create of the name is refused" bash -c '[ "$RC" -ne 0 ] && printf "%s" "$ERR" | grep -q "exists"'
sc volume create "../x"
check "a bad volume name is refused" [ "$RC" -ne 0 ]
sc volume ls --json
check "volume ls --json lists it with its size" \
	[ "$(jget "[v['size'] for v in d if v['name']=='$V']")" = "[67108864]" ]
sc volume inspect --json "$V"
VPATH=$(jget "d['path']")
check "volume inspect gives its host directory" [ -d "$VPATH" ]
check "volume inspect says whether the cap is enforced (root: yes)" \
	[ "$(jget "d['enforced']")" = "$([ "$SANDCELL_TEST_AS" = root ] && echo true || echo false)" ]

# --- two cells write and read one volume at once ---
sc create --volume "$V:/shared" "$A"
check "create --volume NAME:/path" expect_rc 0
sc create -v "$V:/shared" "$B"
check "create -v NAME:/path (a name, not a host path)" expect_rc 0
sc ps --json
check "ps --json shows the volume of each cell" \
	[ "$(jget "sorted(c['name'] for c in d if '$V' in c['volumes'])")" = "[\"$A\", \"$B\"]" ]
WRITER='i=0; while [ $i -lt 200 ]; do echo "$1 $i" > /shared/$1.$i; i=$((i+1)); done; echo done'
as_user "$SC_BIN" exec "$A" -- sh -c "$WRITER" sh a >"$T_WORK/wa" 2>&1 &
pa=$!
as_user "$SC_BIN" exec "$B" -- sh -c "$WRITER" sh b >"$T_WORK/wb" 2>&1 &
pb=$!
wait "$pa"; ra=$?
wait "$pb"; rb=$?
check "both cells wrote 200 files each at the same time" \
	bash -c "[ $ra -eq 0 ] && [ $rb -eq 0 ] && grep -qx done '$T_WORK/wa' && grep -qx done '$T_WORK/wb'"
sc exec "$A" -- sh -c 'cat /shared/b.* | wc -l; cat /shared/b.199'
check "cell A reads what cell B wrote" out_is "$(printf '200\nb 199')"
sc exec "$B" -- sh -c 'cat /shared/a.* | wc -l; stat -c %u:%g /shared/a.0'
check "cell B reads what cell A wrote, owned by its own root" out_is "$(printf '200\n0:0')"

# --- removal refused while mounted ---
sc volume rm "$V"
check "volume rm is refused while cells mount it, naming one" \
	bash -c '[ "$RC" -ne 0 ] && printf "%s" "$ERR" | grep -q "in use by cell" && [ -d "$0" ]' "$VPATH"
sc volume inspect --json "$V"
check "volume inspect lists the cells that mount it" \
	[ "$(jget "sorted(d['cells'])")" = "[\"$A\", \"$B\"]" ]
sc rm -f "$A" "$B"
check "the cells are removed" expect_rc 0

# --- outlives cells; read-only mounts ---
sc run -v "$V:/d:ro" -- sh -c 'cat /d/a.7; echo x > /d/new'
check "a :ro mount reads the files a removed cell wrote" out_has "a 7"
check "a :ro mount refuses writes" bash -c '[ "$RC" -ne 0 ] && printf "%s" "$ERR" | grep -q "Read-only file system"'
check "nothing was written through the :ro mount" [ ! -e "$VPATH/new" ]
sc run -v "nosuch$$:/d" -- true
check "a volume that does not exist is an error that says so" \
	bash -c '[ "$RC" -eq 125 ] && printf "%s" "$ERR" | grep -q "no volume"'
mkdir -p "$T_WORK/hostdir" && echo host >"$T_WORK/hostdir/f" && chmod -R a+rX "$T_WORK/hostdir"
sc run -v "$T_WORK/hostdir:/h:ro" -- cat /h/f
check "a host path bind still works beside volumes" out_is host

# --- the cap ---
sc volume create --size 8M "$VC"
check "a small volume" expect_rc 0
sc run -v "$VC:/c" -- sh -c 'dd if=/dev/zero of=/c/big bs=1M count=12 2>&1; echo rc=$?'
if [ "$SANDCELL_TEST_AS" = root ]; then
	check "root: writing past the cap fails with ENOSPC" \
		bash -c 'printf "%s" "$OUT" | grep -q "No space left on device"' && true
	sc volume inspect --json "$VC"
	check "root: the volume holds no more than its size" [ "$(jget "d['used'] <= d['size']")" = true ]
else
	check "rootless: the write past the cap lands (the cap is checked at mount)" out_has "rc=0"
	sc run -v "$VC:/c" -- true
	check "rootless: a volume over its cap is refused at the next mount" \
		bash -c '[ "$RC" -eq 125 ] && printf "%s" "$ERR" | grep -q "over its size"'
	as_user rm -f "$(sc volume inspect --json "$VC"; jget "d['path']")/big"
	sc run -v "$VC:/c" -- true
	check "rootless: once files are removed the volume mounts again" expect_rc 0
fi

# --- rm leaves nothing ---
sc volume rm "$V" "$VC"
check "volume rm succeeds once no cell mounts it" expect_rc 0
check "its directory is gone" [ ! -e "$VPATH" ]
sc volume ls --json
check "volume ls is empty" out_is "[]"
check "no mount of the volume is left on the host" \
	bash -c '! grep -q "$0" /proc/self/mountinfo' "$SANDCELL_ROOT/data/volumes"
check "no loop device points at a volume image" \
	bash -c '! (losetup -a 2>/dev/null | grep -q "$0")' "$SANDCELL_ROOT"
finish
