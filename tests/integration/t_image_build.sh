#!/usr/bin/env bash
# ctest-timeout: 1500
# sandcell image build minimal: the shipped recipe, mmdebstrap from the
# host's Debian mirror. Rootless builds need subordinate ids for the user
# (mmdebstrap --mode=unshare): the harness gives nobody a range of its own
# in /etc/subuid and /etc/subgid first (give_test_user_subids, tests/lib.sh).
# (A range given to nobody in a private mount namespace, bind-mounted over
# /etc/subuid, was tried: mmdebstrap then failed now and then to mount
# dev/shm in its chroot, one run in three here, so it is not used.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/image_cache.sh"

command -v mmdebstrap >/dev/null || { echo "skip: mmdebstrap is not installed"; exit 77; }
if [ "$SANDCELL_TEST_AS" = nobody ]; then
	command -v newuidmap >/dev/null || { echo "skip: newuidmap (uidmap) is not installed"; exit 77; }
	give_test_user_subids
	check "the test user has subordinate ids (/etc/subuid and /etc/subgid)" \
		bash -c 'grep -qsE "^(nobody|65534):" /etc/subuid && grep -qsE "^(nobody|65534):" /etc/subgid'
fi
RC_DIR="$T_DIR/recipes"
mkdir -p "$RC_DIR"
cp "$SRCDIR"/scripts/images/*.sh "$RC_DIR/"
chmod -R a+rX "$RC_DIR"
export T_EXTRA_ENV="SANDCELL_RECIPES=$RC_DIR"
# Downloaded packages are kept between runs (in root's cache only; each
# test has its own, as concurrent builds would share half-copied files).
[ "$SANDCELL_TEST_AS" = root ] && T_EXTRA_ENV="$T_EXTRA_ENV SANDCELL_APT_CACHE=$IMG_CACHE/apt-build"
DATA="$SANDCELL_ROOT/data"

start=$(date +%s)
sc image build minimal
echo "# minimal image built in $(($(date +%s) - start)) s"
check "image build minimal succeeds" bash -c '[ '$RC' -eq 0 ] && grep -q "built image '"'minimal'"'" <<<"$0"' "$ERR"
[ "$RC" -eq 0 ] || { printf '%s\n' "$ERR" | tail -20; finish; exit; }

sc run --image minimal -- python3 -c 'import sys; print("py", sys.version_info[0], 6 * 7)'
check "python3 runs in the minimal image" out_is "py 3 42"
sc run --image minimal -- sh -c 'pwd; cat /etc/debian_version | cut -d. -f1; cat /etc/hostname'
check "it is Debian 12, starting in /testbed, with its own hostname file" out_is "$(printf '/testbed\n12\nsandcell')"

# Host files are absent: tools the host has, the host's name and resolver,
# a marker in the caller's home.
marker="sandcell-build-marker-$$"
touch "/root/$marker" 2>/dev/null
sc run --image minimal -- sh -c 'for f in /usr/bin/cmake /usr/bin/gcc /usr/bin/mmdebstrap /etc/resolv.conf /root/'"$marker"' '"$SRCDIR"'; do test -e "$f" && echo "present: $f"; done; true'
rm -f "/root/$marker"
check "no host file is in the image" out_is ""
sc run -- sh -c 'test -e /usr/bin/cmake && echo host-has-cmake'
check "(while the host image has them)" out_is host-has-cmake

sc run --image minimal -- sh -c 'id -u; stat -c %U /usr/bin/python3.11; echo e >/etc/e && cat /etc/e; echo t >/tmp/t && cat /tmp/t; echo b >/testbed/b && cat /testbed/b'
check "cell root owns the image and writes to /etc, /tmp and /testbed" out_is "$(printf '0\nroot\ne\nt\nb')"
sc run --image minimal -- sh -c 'find / -xdev -perm /6000 -type f 2>/dev/null | wc -l'
check "no setuid or setgid file is left in the image" out_is 0

sc image ls --json
check "the image is listed as built from the recipe" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
i=[x for x in json.load(sys.stdin) if x[\"name\"]==\"minimal\"][0]
assert i[\"source\"].endswith(\"/minimal.sh\") and i[\"workdir\"]==\"/testbed\" and i[\"size\"]>50e6, i
"' "$OUT"

# The built tree feeds the test cache (t_image_pull).
if [ "$SANDCELL_TEST_AS" = root ]; then
	id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0])' "$DATA/images/minimal.json")
	img_cache_store "$DATA/layers/$id" "$DATA/images/minimal.json" || true
fi

sc image rm minimal
check "image rm removes the image and its layer" bash -c '[ '$RC' -eq 0 ] && [ -z "$(ls -A '"$DATA"'/layers)" ]'
check "nothing is left in the work directory" bash -c '[ -z "$(ls -A '"$DATA"'/tmp)" ]'

finish
