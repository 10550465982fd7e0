#!/usr/bin/env bash
# sandcell commit: a cell's writable layer on top of its image becomes a new
# image (new files, deletions, replaced directories), usable with --image.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: /bin/busybox (busybox-static) is needed for the test image"; exit 77; }
A="$T_DIR/archives"
mkdir -p "$A"
python3 "$SRCDIR/tests/integration/image_tool.py" docker "$A/base.tar"
chmod -R a+rX "$A"

sc image import "$A/base.tar" base
check "the base image imports" expect_rc 0
c="commit$$"
sc create --image base "$c"
sc exec "$c" -- sh -c 'echo new >/etc/added2 && rm /etc/kept && mkdir -p /data/x && echo d >/data/x/f && rm -rf /opq && mkdir /opq && echo fresh >/opq/only && ln -s /data/x/f /data/link'
check "the cell changes its files" expect_rc 0
sc commit "$c" derived
check "commit makes an image" bash -c '[ '$RC' -eq 0 ] && [ "$0" = derived ]' "$OUT"
sc run --image derived -- sh -c 'cat /etc/added2 /data/x/f /data/link /etc/added; ls /opq'
check "the new image has the cell's new files and the base's" out_is "$(printf 'new\nd\nd\nadded\nonly')"
sc run --image derived -- sh -c 'test -e /etc/kept && echo present || echo absent'
check "a file the cell deleted is gone from the new image" out_is absent
sc run --image base -- sh -c 'cat /etc/kept; test -e /etc/added2 && echo leaked || echo clean'
check "the base image is unchanged" out_is "$(printf 'kept\nclean')"
# FIFOs were dropped without a word: now they are carried
c2="fifo$$"
sc create --image base "$c2"
sc exec "$c2" -- sh -c 'mkdir -p /data/d && mkfifo /data/pipe /data/d/p2'
check "the cell makes FIFOs" expect_rc 0
sc commit "$c2" withfifo
check "commit of a cell with FIFOs makes an image" expect_rc 0
sc run --image withfifo -- sh -c 'test -p /data/pipe && test -p /data/d/p2 && echo fifos'
check "the new image has the cell's FIFOs" out_is fifos
sc rm "$c2"
sc image rm withfifo
sc image ls --json
check "image ls shows where the image came from" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
i=[x for x in json.load(sys.stdin) if x[\"name\"]==\"derived\"][0]
assert i[\"source\"]==\"commit:'$c'@base\", i"' "$OUT"
sc image rm base
check "the base image cannot be removed while a cell uses it" expect_rc 125
sc rm "$c"
h="hostcell$$"
sc create "$h"
sc commit "$h" nope
check "a host-image cell cannot be committed, with a one-line reason" \
	bash -c '[ '$RC' -eq 125 ] && grep -q "host image" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc rm "$h"
sc commit nosuch$$ x
check "commit of a missing cell is a 125 error" expect_rc 125
sc image rm derived
sc image rm base
check "the images can be removed afterwards" expect_rc 0
check "no work directory is left behind" bash -c '[ -z "$(ls -A "$SANDCELL_ROOT/data/tmp" 2>/dev/null)" ]'

finish
