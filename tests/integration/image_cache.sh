# Sourced by the image tests (after ../lib.sh): a cache of the `minimal`
# image's root filesystem as a tar, shared by test runs, so that only
# t_image_build pays for an mmdebstrap build every run. The cache is keyed
# by everything that shapes the result: the recipe's text, the sources of
# the code that runs it and turns its archive into a layer (rootfs/, and
# the common helpers it uses) and mmdebstrap's version. It lives outside
# the tests' SANDCELL_ROOTs.

IMG_CACHE=${SANDCELL_TEST_CACHE:-/var/tmp/sandcell-test-cache}

img_recipe_key() {
	{
		cat "$SRCDIR/scripts/images/minimal.sh" "$SRCDIR/scripts/images/lib.sh"
		cat "$SRCDIR"/rootfs/*.[ch] "$SRCDIR"/common/*.[ch]
		mmdebstrap --version 2>/dev/null
	} | sha256sum | cut -c1-16
}

# img_cache_store LAYER_DIR MANIFEST_JSON: pack a built minimal layer.
img_cache_store() {
	local layer=$1 manifest=$2 key out shift
	key=$(img_recipe_key)
	out="$IMG_CACHE/minimal-$key.tar"
	mkdir -p "$IMG_CACHE"
	shift=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m.get("id_shift",[0])[0])' "$manifest")
	(
		flock 9
		[ -s "$out" ] && exit 0
		python3 "$SRCDIR/tests/integration/image_tool.py" pack-rootfs "$layer" "$out.tmp.$$" "$shift" &&
			mv "$out.tmp.$$" "$out"
		# Keep only the current recipe's cache.
		find "$IMG_CACHE" -maxdepth 1 -name 'minimal-*.tar' ! -name "minimal-$key.tar" -delete
	) 9>"$IMG_CACHE/.lock"
}

# img_minimal_tar: print the path of the cached minimal root filesystem
# tar, building the image (as root, with mmdebstrap) when it is missing.
img_minimal_tar() {
	local key out root
	key=$(img_recipe_key)
	out="$IMG_CACHE/minimal-$key.tar"
	mkdir -p "$IMG_CACHE"
	(
		flock 9
		[ -s "$out" ] && exit 0
		root=$(mktemp -d /var/tmp/sandcell-cache-build.XXXXXX)
		echo "# building the minimal image for the test cache (once)" >&2
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root SANDCELL_ROOT="$root" \
			SANDCELL_APT_CACHE="$IMG_CACHE/apt-cache" \
			SANDCELL_RECIPES="$SRCDIR/scripts/images" "$SC_BIN" image build minimal >&2 || {
			rm -rf "$root"
			exit 1
		}
		local m="$root/data/images/minimal.json" id
		id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0])' "$m")
		python3 "$SRCDIR/tests/integration/image_tool.py" pack-rootfs "$root/data/layers/$id" "$out.tmp.$$" \
			"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("id_shift",[0])[0])' "$m")" &&
			mv "$out.tmp.$$" "$out"
		rm -rf "$root"
	) 9>"$IMG_CACHE/.lock" || return 1
	echo "$out"
}
