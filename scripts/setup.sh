#!/usr/bin/env bash
# Install every build/test dependency (Debian 12) and build build/sandcell.
# Idempotent: packages already present are skipped by apt, the build is
# incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=$(sed -e 's/#.*//' scripts/packages.txt | tr -s ' \n' '\n' | sed '/^$/d' | sort -u)
missing=()
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "setup: installing ${missing[*]}" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# the tests start their own prometheus on loopback: the service the
	# package starts (where systemd runs) is not wanted when we put it here
	if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
fi

# --lang jest (SandboxFusion's jest mode): Debian 12's jest package cannot
# be installed (a dependency it names is missing), so jest comes from npm,
# at the versions scripts/images/jest/package-lock.json pins, into
# /usr/local/lib/sandcell/jest, where every cell of the host image sees it;
# `sandcell-jest` on PATH runs it. Redone only when the lock file changed.
install_jest() {
	local dir=/usr/local/lib/sandcell/jest src=scripts/images/jest SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	if ! command -v npm >/dev/null; then
		$SUDO apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
	fi
	local f same=1
	for f in package.json package-lock.json babel.config.js report.js run.js; do
		cmp -s "$src/$f" "$dir/$f" || same=0
	done
	[ "$same" = 1 ] && [ -x "$dir/node_modules/.bin/jest" ] && [ -L /usr/local/bin/sandcell-jest ] && return 0
	echo "setup: installing jest from npm into $dir" >&2
	$SUDO mkdir -p "$dir"
	$SUDO cp "$src/package.json" "$src/package-lock.json" "$src/babel.config.js" "$src/report.js" \
		"$src/run.js" "$dir/"
	(cd "$dir" && $SUDO npm ci --omit=dev --no-audit --no-fund --loglevel=error >/dev/null)
	$SUDO ln -sfn ../lib/sandcell/jest/run.js /usr/local/bin/sandcell-jest
}
install_jest

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "setup: built build/sandcell" >&2
