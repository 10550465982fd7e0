#!/usr/bin/env bash
# sandcell image import / ls / rm: docker save archives and OCI layouts,
# whiteouts, image defaults, shared layers, and hostile archives that must
# be refused or neutralised without touching the host.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: /bin/busybox (busybox-static) is needed for the test images"; exit 77; }
TOOL="$SRCDIR/tests/integration/image_tool.py"
A="$T_DIR/archives"
mkdir -p "$A"
chmod 755 "$A"
mk() { python3 "$TOOL" "$@" && chmod -R a+rX "$A"; }
DATA="$SANDCELL_ROOT/data"

no_leftovers() { [ -z "$(ls -A "$DATA/tmp" 2>/dev/null)" ]; }
layer_count() { ls "$DATA/layers" 2>/dev/null | grep -c '^sha256-'; }

# --- a docker save archive with two layers ---
mk docker "$A/two.tar"
sc image import "$A/two.tar" two
check "import of a docker save archive succeeds" expect_rc 0
check "import reports the image" err_has "imported image 'two'"
sc run --image two -- cat /etc/kept
check "a file of the lower layer is there" out_is kept
sc run --image two -- cat /etc/added
check "a file of the upper layer is there" out_is added
sc run --image two -- sh -c 'test -e /etc/gone && echo present || echo absent'
check "a whiteout in the upper layer deleted the lower file" out_is absent
sc run --image two -- ls /opq
check "an opaque directory hides the lower layer's entries" out_is new
sc run --image two -- cat /etc/hard /etc/abs-link
check "hard links and absolute symlinks resolve inside the image" out_is "$(printf 'kept\nkept')"
sc run --image two -- sh -c 'echo "$IMAGE_VAR $PATH"; pwd'
check "the image's env and workdir are the cell's defaults" out_is "$(printf 'from-image /bin\n/work')"
sc run --image two -e IMAGE_VAR=cli -w /tmp -- sh -c 'echo "$IMAGE_VAR"; pwd'
check "-e and -w override the image's defaults" out_is "$(printf 'cli\n/tmp')"

# --- the image's ENTRYPOINT and CMD run when no command is given ---
mk docker-cmd "$A/cmd.tar"
mk docker-cmd "$A/nocmd.tar" none
sc image import "$A/cmd.tar" withcmd
sc image import "$A/nocmd.tar" nocmd
sc run --image withcmd
check "run without a command runs ENTRYPOINT + CMD with the image's env and workdir" \
	out_is "hello from /etc as 0"
sc run --image withcmd -e GREETING=bye -w /tmp
check "-e and -w apply to the image's command too" out_is "bye from /tmp as 0"
sc run --image withcmd -- echo mine
check "a command given replaces ENTRYPOINT and CMD" out_is mine
sc run --image nocmd
check "an image with neither: 125" expect_rc 125
check "... and says so" err_has "image 'nocmd' has no ENTRYPOINT or CMD"
sc run
check "no command and no image is a usage error" err_has "no command given"
sc image rm withcmd nocmd
sc run --image two -- sh -c 'ls /usr /root 2>&1; test -e /etc/passwd && echo host-passwd'
check "nothing of the host's /usr or /etc is in the image" bash -c '! grep -q host-passwd <<<"$0"' "$OUT"
sc run --image two -- sh -c 'id -u; echo w >/etc/kept && cat /etc/kept; echo t >/tmp/t && cat /tmp/t; echo b >/testbed/b && cat /testbed/b'
check "cell root owns the image's files and can write (overlay)" out_is "$(printf '0\nw\nt\nb')"
sc run --image two -- cat /etc/kept
check "writes do not reach the image" out_is kept

sc image ls --json
check "image ls --json lists the image with its defaults" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
l=json.load(sys.stdin); i=[x for x in l if x[\"name\"]==\"two\"][0]
assert i[\"env\"]==[\"PATH=/bin\",\"IMAGE_VAR=from-image\"], i
assert i[\"workdir\"]==\"/work\" and i[\"cmd\"]==[\"/bin/sh\"]
assert i[\"id\"].startswith(\"sha256-\") and i[\"size\"]>1000000 and i[\"source\"].startswith(\"import:docker:\")
"' "$OUT"
sc image ls
check "image ls prints a table" bash -c 'grep -q "^NAME" <<<"$0" && grep -q "^two " <<<"$0"' "$OUT"

# --- the same image again: the layer is shared, not copied ---
sc image import "$A/two.tar" two-again
check "importing the same image under another name shares its layer" \
	bash -c '[ '$RC' -eq 0 ] && grep -q "sharing a stored layer" <<<"$0" && [ "$(ls '"$DATA"'/layers | wc -l)" -eq 1 ]' "$ERR"

# --- OCI layouts: a directory, a tar of it, and a gzip'ed docker archive ---
mk oci "$A/oci"
sc image import "$A/oci" oci-dir
check "import of an OCI layout directory (gzip layers) succeeds" expect_rc 0
sc run --image oci-dir -- sh -c 'cat /etc/added; test -e /etc/gone || echo gone'
check "the OCI image runs with its whiteouts applied" out_is "$(printf 'added\ngone')"
tar -C "$A/oci" -cf "$A/oci.tar" . && chmod 644 "$A/oci.tar"
sc image import "$A/oci.tar" oci-tar
check "import of an OCI layout tar succeeds" expect_rc 0
mk oci-zstd "$A/oci-zstd"
layers_before=$(layer_count)
sc image import "$A/oci-zstd" oci-zstd
check "import of an OCI layout with zstd layers (two frames each) succeeds" expect_rc 0
check "the zstd image shares the gzip image's stored layer (same diff_ids)" \
	bash -c '[ "$0" -eq "$1" ] && grep -q "sharing a stored layer" <<<"$2"' "$(layer_count)" "$layers_before" "$ERR"
sc run --image oci-zstd -- sh -c 'cat /etc/kept /etc/added; test -e /etc/gone || echo gone; ls /opq'
check "the zstd image runs with its whiteouts and opaque directory applied" \
	out_is "$(printf 'kept\nadded\ngone\nnew')"
sc image rm oci-zstd
gzip -c "$A/two.tar" >"$A/two.tar.gz" && chmod 644 "$A/two.tar.gz"
sc image import "$A/two.tar.gz" two-gz
check "import of a gzip-compressed docker archive succeeds" expect_rc 0

# --- removal ---
c="imgcell$$"
sc create --image two "$c"
check "a cell can be made on the imported image" expect_rc 0
sc image rm two
check "image rm is refused while a cell uses the image" bash -c '[ '$RC' -ne 0 ] && grep -q "'$c'" <<<"$0"' "$ERR"
sc rm -f "$c"
sc image rm two
check "image rm removes the image" expect_rc 0
sc run --image two-again -- cat /etc/kept
check "an image sharing the layer still runs" out_is kept
sc image rm two-again oci-dir oci-tar two-gz
check "removing the last users removes the layers" bash -c '[ '$RC' -eq 0 ] && [ "$(ls -A '"$DATA"'/layers | wc -l)" -eq 0 ]'
sc image rm two
check "removing a missing image fails with one line" bash -c '[ '$RC' -ne 0 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc run --image nosuch -- true
check "running a missing image is a 125 error naming it" bash -c '[ '$RC' -eq 125 ] && grep -q "nosuch" <<<"$0"' "$ERR"
sc image import "$A/two.tar" host
check "the name host is reserved" expect_rc 125

# --- hostile archives ---
OUTSIDE="$T_WORK/outside"
mkdir -p "$OUTSIDE"
echo secret >"$OUTSIDE/secret"
chown -R "$T_UID:$T_UID" "$OUTSIDE"
chmod 777 "$OUTSIDE" # writable by the test user: only sandcell's checks stand in the way
before=$(cd "$T_WORK" && find . -path ./root -prune -o -print | sort | md5sum)

hostile() { # NAME KIND ARG: import must fail; nothing left behind
	mk hostile "$2" "$A/$1.tar" "${3:-}"
	sc image import "$A/$1.tar" "$1"
	# 125: sandcell refused it (an abort, 134, or a crash is no refusal)
	check "hostile archive ($1) is refused (125)" expect_rc 125
	check "hostile archive ($1): the error is one line" err_one_line
	local listed
	listed=$(as_user "$SC_BIN" image ls --json 2>/dev/null)
	check "hostile archive ($1): no image, no temporary files left" \
		bash -c '! grep -q "\"'$1'\"" <<<"$0" && [ -z "$(ls -A '"$DATA"'/tmp)" ]' "$listed"
}
hostile traversal traversal "$OUTSIDE/pwned-traversal"
check "path traversal is refused as such" err_has "'\.\.'"
hostile absolute absolute "$OUTSIDE/pwned-absolute"
check "absolute paths are refused as such" err_has "absolute path"
hostile symlink symlink-escape "$OUTSIDE"
check "writing through a symlink is refused as such" err_has "symlink"
hostile symlink2 symlink-escape-layers "$OUTSIDE"
check "writing through a symlink of an earlier layer is refused as such" err_has "symlink"
hostile hardlink hardlink-escape "$OUTSIDE/secret"
check "a hard link to an absolute path is refused as such" err_has "absolute path"
hostile hardlink2 hardlink-dotdot "$OUTSIDE/secret"
check "a hard link up and out is refused as such" err_has "'\.\.'"
hostile baddiff bad-diffid
check "a layer that does not match its diff_id is refused" err_has "diff_id"
hostile notatar not-an-archive
check "a file that is not an archive is refused as such" err_has "not a tar archive"
mk hostile bomb "$A/bomb" 64
sc image import --max-size 16M "$A/bomb" bomb
check "an archive past --max-size is refused" bash -c '[ '$RC' -ne 0 ] && grep -q -- "--max-size" <<<"$0"' "$ERR"
check "the size bomb left nothing behind" bash -c '[ -z "$(ls -A '"$DATA"'/tmp)" ] && [ -z "$(ls -A '"$DATA"'/layers)" ]'
zstd_refused() { # KIND ARG WHAT: import of the OCI layout must fail, saying WHAT
	mk hostile "$1" "$A/$1" "$2"
	sc image import "$A/$1" "$1"
	check "hostile zstd layer ($1) is refused (125), saying '$3'" \
		bash -c '[ '$RC' -eq 125 ] && grep -q "$1" <<<"$0"' "$ERR" "$3"
	check "hostile zstd layer ($1): no image, no temporary files left" \
		bash -c '! grep -q "\"'$1'\"" <<<"$0" && [ -z "$(ls -A '"$DATA"'/tmp)" ]' \
		"$(as_user "$SC_BIN" image ls --json 2>/dev/null)"
}
zstd_refused zstd-cut 1 "truncated"
zstd_refused zstd-window 1 "window over 128 MiB"
mk hostile zstd-bomb "$A/zstd-bomb" 64
sc image import --max-size 16M "$A/zstd-bomb" zbomb
check "a zstd layer that unpacks past --max-size is refused" \
	bash -c '[ '$RC' -eq 125 ] && grep -q "max-size" <<<"$0"' "$ERR"
mk hostile many "$A/many.tar" 300
sc image import --max-files 100 "$A/many.tar" many
check "an archive past --max-files is refused" bash -c '[ '$RC' -ne 0 ] && grep -q -- "--max-files" <<<"$0"' "$ERR"
check "the host is untouched by the hostile archives" \
	bash -c '[ "$(cd "'"$T_WORK"'" && find . -path ./root -prune -o -print | sort | md5sum)" = "'"$before"'" ] && [ "$(cat "'"$OUTSIDE"'/secret")" = secret ]'
# (other tests' directories aside: they run at the same time under ctest -j)
check "no pwned file anywhere outside" bash -c '[ -z "$(find "$0" -name "pwned*" 2>/dev/null; find /tmp -maxdepth 4 -path "/tmp/sandcell-test.*" -prune -o -name "pwned*" -print 2>/dev/null)" ]' "$T_DIR"
check "no layers were stored by the refused imports" bash -c '[ "$(ls -A '"$DATA"'/layers | wc -l)" -eq 0 ]'

# Neutralised, not refused: setuid bits and device nodes.
mk hostile setuid "$A/setuid.tar"
sc image import "$A/setuid.tar" setuid
check "an archive with setuid files is imported with a warning" bash -c '[ '$RC' -eq 0 ] && grep -q "setuid" <<<"$0"' "$ERR"
sc run --image setuid -- stat -c %a /bin/suid /bin/sgid
check "setuid and setgid bits are stripped" out_is "$(printf '755\n755')"
mk hostile device "$A/device.tar"
sc image import "$A/device.tar" device
check "an archive with a device node is imported with a warning" bash -c '[ '$RC' -eq 0 ] && grep -q "device" <<<"$0"' "$ERR"
sc run --image device -- sh -c 'test -e /dev-evil && echo present || echo absent'
check "device nodes are skipped" out_is absent
layer=$(ls -d "$DATA"/layers/sha256-* | head -1)
check "no setuid file and no device node is stored in any layer" \
	bash -c '[ -z "$(find "'"$DATA"'/layers" \( -perm -4000 -o -perm -2000 -o -type c -o -type b \) | head -1)" ]'
if [ "$SANDCELL_TEST_AS" = root ]; then
	# idmapped layers keep host root as owner; shifted ones (the fallback,
	# t_image_idmap.sh) belong to the cells' range: never to another user
	check "a root caller's layers are owned by host root (idmapped) or the cell id range (shifted)" \
		bash -c 'u=$(stat -c %u "'"$layer"'/bin/busybox"); [ "$u" = 0 ] || [ "$u" -ge 65536 ]'
else
	check "a rootless caller's layers are owned by the caller" \
		bash -c '[ "$(stat -c %u "'"$layer"'/bin/busybox")" = '"$T_UID"' ]'
fi
sc image rm setuid device
check "image rm of several images" expect_rc 0

# --- export: one tar that is an OCI layout and a docker save archive ---
mk oci "$A/exp-src"
sc image import "$A/exp-src" exp
EXP="$T_DIR/export"
mkdir -p "$EXP" && chmod 777 "$EXP"
sc image export exp "$EXP/exp.tar"
check "image export writes the archive, whole (no .partial left)" \
	bash -c '[ "$0" -eq 0 ] && [ -s "$1" ] && [ ! -e "$1.partial" ]' "$RC" "$EXP/exp.tar"
check "... says what it wrote" err_has "exported image 'exp' to $EXP/exp.tar"
check "... and leaves no work directory" no_leftovers
check "the archive holds an OCI layout and a docker save manifest" \
	bash -c 'l=$(tar tf "$0") && for f in oci-layout index.json manifest.json blobs/sha256/; do
		grep -qx "$f" <<<"$l" || exit 1; done' "$EXP/exp.tar"
layer=$(tar xOf "$EXP/exp.tar" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Layers"][0])')
check "its layer's files belong to the image's root (0:0), not to who exported it" \
	bash -c 'o=$(tar xOf "$0" "$1" | tar tvf - | awk "{print \$2}" | sort -u) && [ "$o" = 0/0 ]' \
	"$EXP/exp.tar" "$layer"
sc image import "$EXP/exp.tar" exp-back
check "image import takes the export back" expect_rc 0
tree() { # IMAGE: what a cell of IMAGE sees of the files and defaults
	sc run --image "$1" -- sh -c 'for f in /etc/* /opq/* /bin/*; do stat -c "%n %a %u %g %s %Y %F" "$f"; done
		cat /etc/kept /etc/added; test -e /etc/gone || echo gone; echo "$IMAGE_VAR"; pwd'
	printf '%s' "$OUT"
}
check "... and a cell of it sees the same files, owners, modes, times and defaults" \
	bash -c '[ -n "$0" ] && [ "$0" = "$1" ]' "$(tree exp)" "$(tree exp-back)"
as_user "$SC_BIN" image export exp - >"$EXP/stdout.tar" 2>/dev/null
check "export to - writes the same archive to standard output" \
	bash -c 'cmp -s <(tar tf "$0") <(tar tf "$1")' "$EXP/exp.tar" "$EXP/stdout.tar"
if command -v skopeo >/dev/null; then
	for t in oci-archive docker-archive; do
		check "skopeo reads it as $t, with its env" bash -c 'skopeo --insecure-policy inspect "$0:$1" |
			grep -q IMAGE_VAR=from-image' "$t" "$EXP/exp.tar"
	done
fi
sc image export nosuch "$EXP/no.tar"
check "export of a missing image: an error, and no file" \
	bash -c '[ "$0" -eq 125 ] && [ ! -e "$1" ] && [ ! -e "$1.partial" ]' "$RC" "$EXP/no.tar"
sc image export host "$EXP/host.tar"
check "the host image cannot be exported" err_has "cannot be exported"
sc image rm exp exp-back

# --- usage ---
sc image --help
check "image --help lists the commands" bash -c '[ '$RC' -eq 0 ] && for c in ls build import pull export rm; do grep -q "^  $c " <<<"$0" || exit 1; done' "$OUT"
for c in ls build import pull export rm; do
	sc image "$c" --help
	check "image $c --help" bash -c '[ '$RC' -eq 0 ] && grep -q "^usage: sandcell image '$c'" <<<"$0"' "$OUT"
done
sc image import
check "import without arguments is a usage error" bash -c '[ '$RC' -eq 125 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc image frobnicate
check "an unknown image command is a usage error" expect_rc 125

finish
