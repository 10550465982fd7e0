# Helpers for sandcell image recipes (see docs/images.md). A recipe is run
# by `sandcell image build` as `sh RECIPE` with:
#   SANDCELL_OUT        a FIFO: write the root filesystem there as ONE tar stream
#   SANDCELL_CONFIG     a file for the image's defaults (sc_env, sc_workdir, sc_cmd)
#   SANDCELL_IMAGE      the image name
#   SANDCELL_ROOTLESS   1 when the caller is not root
#   SANDCELL_RECIPE_DIR the recipe's directory (source this file from there)
# Optional, passed through from the caller's environment:
#   SANDCELL_MIRROR           Debian mirror URL (default: the host's apt sources)
#   SANDCELL_SECURITY_MIRROR  Debian security mirror URL (same)
#   SANDCELL_APT_CACHE        a directory that keeps downloaded .debs between builds
#   SANDCELL_BUILD_TMPDIR     where mmdebstrap builds the tree (default: /dev/shm
#                             when it has 6 GB free, else $TMPDIR or /tmp)
# The working directory is a scratch directory that is removed afterwards.

set -eu

sc_env() { printf 'env %s\n' "$1" >>"$SANDCELL_CONFIG"; }
sc_workdir() { printf 'workdir %s\n' "$1" >>"$SANDCELL_CONFIG"; }
sc_cmd() { printf 'cmd %s\n' "$*" >>"$SANDCELL_CONFIG"; }

# The first URI of the host's apt sources whose last path component is $1
# ("debian" or "debian-security"), from one-line and deb822 source files.
sc_host_mirror() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v want="$1" '
			/^[ \t]*#/ { next }
			($1 == "deb" || $1 == "URIs:") {
				for (i = 2; i <= NF; i++) {
					if ($i !~ /^[a-z+]+:\/\//) continue
					u = $i; sub(/\/+$/, "", u)
					n = split(u, p, "/")
					if (p[n] == want) { print u; exit 0 }
				}
			}' "$f"
	done | head -n 1
}

sc_mirror() {
	m=${SANDCELL_MIRROR:-$(sc_host_mirror debian)}
	echo "${m:-http://deb.debian.org/debian}"
}

sc_security_mirror() {
	m=${SANDCELL_SECURITY_MIRROR:-$(sc_host_mirror debian-security)}
	echo "${m:-http://deb.debian.org/debian-security}"
}

# sc_debian SUITE VARIANT [mmdebstrap options...]: write a Debian root
# filesystem to $SANDCELL_OUT with mmdebstrap, from the host's mirror (main,
# updates and security). As root the chroot is made directly; otherwise in
# a user namespace (--mode=unshare, which needs /etc/subuid and /etc/subgid
# entries for the caller and newuidmap/newgidmap from the uidmap package).
sc_debian() {
	suite=$1 variant=$2
	shift 2
	command -v mmdebstrap >/dev/null || {
		echo "recipe: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2
		exit 1
	}
	if [ "${SANDCELL_ROOTLESS:-0}" = 1 ]; then
		mode=unshare
		user=$(id -un 2>/dev/null || id -u)
		if ! grep -qs "^\($user\|$(id -u)\):" /etc/subuid; then
			echo "recipe: building without root needs subordinate ids for $user in /etc/subuid and /etc/subgid (e.g. usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $user)" >&2
			exit 1
		fi
	else
		mode=root
	fi
	main=$(sc_mirror) sec=$(sc_security_mirror)
	# force-unsafe-io: no fsync per unpacked file (halves the build time;
	# a build that dies is thrown away anyway).
	set -- "$@" --mode="$mode" --variant="$variant" --format=tar \
		--aptopt='Acquire::Retries "3"' --dpkgopt=force-unsafe-io
	if [ -n "${SANDCELL_APT_CACHE:-}" ]; then
		mkdir -p "$SANDCELL_APT_CACHE"
		set -- "$@" --skip=download/empty --skip=essential/unlink \
			--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
			--setup-hook="sync-in $SANDCELL_APT_CACHE /var/cache/apt/archives/" \
			--customize-hook="sync-out /var/cache/apt/archives $SANDCELL_APT_CACHE" \
			--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb'
	fi
	# The build host's names and resolver are not the image's.
	set -- "$@" --customize-hook='echo sandcell >"$1/etc/hostname"' \
		--customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 sandcell\n::1 localhost ip6-localhost ip6-loopback\n" >"$1/etc/hosts"' \
		--customize-hook='rm -f "$1/etc/resolv.conf"'
	# mmdebstrap builds a tree, tars it and deletes it: in memory that
	# takes seconds, on a slow disk minutes.
	tmp=${SANDCELL_BUILD_TMPDIR:-}
	if [ -z "$tmp" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
		[ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2{print $4}')" -ge 6291456 ] 2>/dev/null; then
		tmp=/dev/shm
	fi
	# As root, mmdebstrap mounts /proc, /sys and /dev in its tree: in a
	# mount namespace of its own they never show on the host and go with
	# it, however it ends. (On the host they would also be locked children
	# of /dev/shm in other users' namespaces, where a rootless mmdebstrap's
	# non-recursive bind of /dev/shm then fails with EINVAL.)
	private=
	[ "$mode" = root ] && command -v unshare >/dev/null && private="unshare --mount --propagation private"
	echo "recipe: mmdebstrap $suite ($variant, mode $mode) from $main, in ${tmp:-${TMPDIR:-/tmp}}" >&2
	TMPDIR=${tmp:-${TMPDIR:-/tmp}} $private mmdebstrap "$@" "$suite" "$SANDCELL_OUT" \
		"deb $main $suite main" "deb $main $suite-updates main" \
		"deb $sec $suite-security main"
}

# Keep images small: drop manuals, documentation and translations after
# installing (dpkg's path-exclude would filter every package through
# mmtarfilter, which costs more time than the build saves).
SC_SMALL='--customize-hook=rm -rf "$1"/usr/share/man/* "$1"/usr/share/doc/* "$1"/usr/share/locale/* "$1"/usr/share/info/*'

# sc_code_image PACKAGES [mmdebstrap options...]: the defaults and the
# build of an image for code (python.sh, code.sh): Debian 12 with PACKAGES
# (comma-separated); matplotlib draws to files (Agg); pip may install into
# the system (the cell is the sandbox); cells start in /testbed, in bash.
sc_code_image() {
	pkgs=$1
	shift
	sc_env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	sc_env LANG=C.UTF-8
	sc_env MPLBACKEND=Agg
	sc_env PIP_BREAK_SYSTEM_PACKAGES=1
	sc_env PIP_ROOT_USER_ACTION=ignore
	sc_env PYTHONUNBUFFERED=1
	sc_workdir /testbed
	sc_cmd /bin/bash
	sc_debian bookworm apt --include="$pkgs" \
		--customize-hook='printf "backend: Agg\n" >"$1/etc/matplotlibrc"' \
		--customize-hook='mkdir -p "$1/testbed"' "$SC_SMALL" "$@"
}

# jest for --lang jest: from npm at the versions jest/package-lock.json
# pins, into SC_JEST with `sandcell-jest` on PATH, as scripts/setup.sh puts
# it on the host. sc_jest_hooks: the mmdebstrap options that do it, one
# per line: with the build host's npm where it has one (its registry,
# proxy and certificate settings are the ones that reach npm from here),
# else with the image's own npm in the chroot; no npm cache is kept.
SC_JEST=/usr/local/lib/sandcell/jest
sc_jest_hooks() {
	j=$SANDCELL_RECIPE_DIR/jest
	ci="npm ci --omit=dev --no-audit --no-fund --loglevel=error"
	echo "--customize-hook=mkdir -p \"\$1$SC_JEST\" \"\$1/usr/local/bin\""
	echo "--customize-hook=copy-in $j/package.json $j/package-lock.json $j/babel.config.js $j/report.js $j/run.js $SC_JEST"
	echo "--customize-hook=if command -v npm >/dev/null; then (cd \"\$1$SC_JEST\" && $ci --cache \"\$1/tmp/sandcell-npm\"); else chroot \"\$1\" sh -c 'cd $SC_JEST && $ci --cache /tmp/sandcell-npm'; fi && rm -rf \"\$1/tmp/sandcell-npm\" && ln -sfn ../lib/sandcell/jest/run.js \"\$1/usr/local/bin/sandcell-jest\""
}
