#!/usr/bin/env bash
# Who owns an image's files, on the host and in the cell. A root caller's
# layers stay owned by the image's own ids (host root) and cells see them
# through idmapped mounts; SANDCELL_LAYER_IDMAP=0 (the fallback for kernels
# or filesystems without idmapped mounts) stores them shifted into the
# cells' host range instead. Either way cell root owns what the image gives
# root, uid 1000 owns what it gives 1000, writes go to the cell's own layer
# and nothing is left mounted on the host. A rootless caller's layers are
# its own and appear as root's.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: /bin/busybox (busybox-static) is needed for the test images"; exit 77; }
TOOL="$SRCDIR/tests/integration/image_tool.py"
A="$T_DIR/archives"
mkdir -p "$A"
DATA="$SANDCELL_ROOT/data"
for m in idmapped shifted; do python3 "$TOOL" owners "$A/$m.tar" "$m"; done
chmod -R a+rX "$A"

layer_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0])' "$DATA/images/$1.json"; }
shift_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("id_shift", ["none"])[0])' "$DATA/images/$1.json"; }
host_owner() { stat -c %u:%g "$DATA/layers/$(layer_of "$1")/$2"; }
mounts_of_root() { grep -c -- "$SANDCELL_ROOT" /proc/self/mountinfo; }
export -f layer_of shift_of host_owner mounts_of_root host_file_state
export DATA SANDCELL_ROOT

OWNERS='stat -c "%u:%g %a %n" /bin/busybox /etc/root-only /home/dev /home/dev/notes; cat /etc/root-only'
OWNERS_WANT=$(printf '0:0 755 /bin/busybox\n0:0 600 /etc/root-only\n1000:1000 755 /home/dev\n1000:1000 644 /home/dev/notes\nsecret')

sc image import "$A/idmapped.tar" owners
check "import of an image with root's and uid 1000's files" expect_rc 0

if [ "$SANDCELL_TEST_AS" != root ]; then
	sc run --image owners -- stat -c %u:%g /bin/busybox /home/dev/notes
	check "a rootless caller's image files are root's in the cell" out_is "$(printf '0:0\n0:0')"
	check "a rootless caller's layer belongs to the caller on the host" \
		bash -c '[ "$(stat -c %u "$0")" = '"$T_UID"' ]' "$DATA/layers/$(layer_of owners)/bin/busybox"
	finish
	exit
fi

# --- root caller, idmapped layers ---
range=$(awk -F: '$1 == "sandcell" { print $2; exit }' /etc/subuid 2>/dev/null)
range=${range:-524288}
sc doctor
layers_line=$(printf '%s\n' "$OUT" | grep '^layers ')
check "doctor tells a root caller how its layers are stored" bash -c '[ -n "$0" ]' "$layers_line"
if printf '%s' "$layers_line" | grep -q ' shifted: '; then
	# the host's kernel or filesystem cannot: the fallback is all there is
	echo "skip: this host has no idmapped layers: $layers_line"
	exit 77
fi
check "the manifest records no shift" bash -c '[ "$(shift_of owners)" = none ]'
check "the layer's root files are owned by host root" bash -c '[ "$(host_owner owners bin/busybox)" = 0:0 ]'
check "the layer's uid 1000 files are owned by host uid 1000, not the cells' range" \
	bash -c '[ "$(host_owner owners home/dev/notes)" = 1000:1000 ]'
sc run --image owners -- sh -c "$OWNERS"
check "in the cell, stat shows the image's own owners and cell root reads its 0600 file" out_is "$OWNERS_WANT"
sc run --image owners -- id -u
check "the cell's root is root in the cell" out_is 0
# an image's 1777 directory: world-writable in the stored layer, so the
# layer itself must be closed to the cells' host uid (whose group may
# traverse layers/ for shifted images)
shared="$DATA/layers/$(layer_of owners)/shared"
check "the image's 1777 directory keeps its mode in the layer" bash -c '[ "$(stat -c %a "$0")" = 1777 ]' "$shared"
check "the cells' host uid cannot plant a file in a stored layer" \
	bash -c '! setpriv --reuid="$1" --regid="$1" --clear-groups touch "$0/planted" 2>/dev/null && [ ! -e "$0/planted" ]' \
	"$shared" "$range"
sc run --image owners -- sh -c 'stat -c %a /shared && echo x >/shared/f && cat /shared/f'
check "in the cell the directory is still 1777 and writable" out_is "$(printf '1777\nx')"

marker="$DATA/layers/$(layer_of owners)/etc/marker"
before=$(host_file_state "$marker")
sc create --image owners box
check "a long-lived cell on idmapped layers starts" expect_rc 0
sc exec box -- sh -c 'echo more >>/etc/marker; echo new >/etc/new; stat -c "%u:%g" /etc/marker /etc/new; cat /etc/marker'
check "writes over idmapped layers keep the owners and land in the cell" \
	out_is "$(printf '0:0\n0:0\nidmapped\nmore')"
check "the write did not reach the layer on the host" \
	bash -c '[ "$(host_file_state "$0")" = "$1" ] && [ ! -e "$2" ]' "$marker" "$before" "${marker%/marker}/new"
sc exec box -- sh -c 'echo x >>/home/dev/notes'
check "uid 1000's file is really uid 1000's: the cell's root (no capabilities) may not write it" \
	bash -c '[ "$RC" -ne 0 ] && grep -q "Permission denied" <<<"$ERR"'
sc exec box -- sh -c 'rm /etc/root-only && test ! -e /etc/root-only && echo gone'
check "cell root can delete an image file (a whiteout in its own layer)" out_is gone
check "the deleted file is still in the layer" test -e "${marker%/marker}/root-only"
check "no mount of the cell's layers shows in the host's mount table while it runs" \
	bash -c '[ "$(mounts_of_root)" = 0 ]'
sc rm -f box
check "the cell is removed" expect_rc 0
check "nothing of the test's sandcell root is mounted on the host" bash -c '[ "$(mounts_of_root)" = 0 ]'

# A layer shared with an image imported under the fallback keeps the
# owners it has: the new image is mounted the way its layer is stored.
T_EXTRA_ENV="SANDCELL_LAYER_IDMAP=0" sc image import "$A/idmapped.tar" same
check "the same archive imported with SANDCELL_LAYER_IDMAP=0 shares the layer" \
	bash -c '[ "$(layer_of same)" = "$(layer_of owners)" ] && [ "$(shift_of same)" = none ]'
sc run --image same -- sh -c "$OWNERS"
check "a shared idmapped layer shows the right owners in the other image's cells" out_is "$OWNERS_WANT"

# --- the fallback: shifted layers ---
T_EXTRA_ENV="SANDCELL_LAYER_IDMAP=0" sc doctor
check "doctor says the layers are shifted, and why" \
	bash -c 'printf "%s" "$0" | grep -q "^layers .*shifted.*SANDCELL_LAYER_IDMAP=0"' "$OUT"
T_EXTRA_ENV="SANDCELL_LAYER_IDMAP=0" sc image import "$A/shifted.tar" shifted
check "import with SANDCELL_LAYER_IDMAP=0" expect_rc 0
check "the fallback's manifest records the shift" bash -c '[ "$(shift_of shifted)" = '"$range"' ]'
check "the fallback's layer is owned by the cells' range on the host" \
	bash -c '[ "$(host_owner shifted bin/busybox)" = '"$range:$range"' ] &&
		[ "$(host_owner shifted home/dev/notes)" = '"$((range + 1000)):$((range + 1000))"' ]'
sc run --image shifted -- sh -c "$OWNERS"
check "in a cell on shifted layers, stat shows the same owners" out_is "$OWNERS_WANT"
sc run --image shifted -- sh -c 'echo w >/etc/marker && cat /etc/marker'
check "a cell writes over shifted layers" out_is w
check "nothing is mounted on the host afterwards" bash -c '[ "$(mounts_of_root)" = 0 ]'

finish
