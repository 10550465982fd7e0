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

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "setup: built build/sandcell" >&2
