#!/usr/bin/env bash
# Install the AppArmor profile that lets sandcell create user namespaces on
# hosts that restrict them (kernel.apparmor_restrict_unprivileged_userns=1,
# Ubuntu 23.10 and later), and load it. Run as root:
#
#   scripts/install-apparmor.sh [PATH-OF-SANDCELL]   (default: the sandcell on PATH)
#
# Writes /etc/apparmor.d/sandcell (APPARMOR_D overrides the directory) for
# that binary's real path; a binary moved later needs the script again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
profile="$here/packaging/apparmor/sandcell"
dest_dir=${APPARMOR_D:-/etc/apparmor.d}

bin=${1:-$(command -v sandcell || true)}
[ -n "$bin" ] || { echo "install-apparmor: no sandcell on PATH; give its path" >&2; exit 2; }
real=$(readlink -f -- "$bin") || real=""
[ -n "$real" ] && [ -f "$real" ] && [ -x "$real" ] ||
	{ echo "install-apparmor: $bin is not an executable" >&2; exit 2; }
bin=$real
# a path AppArmor takes unquoted, and that sed takes literally
if ! [[ $bin =~ ^/[A-Za-z0-9._/+-]+$ ]]; then
	echo "install-apparmor: $bin: only letters, digits and . _ / + - are supported in the path" >&2
	exit 2
fi
command -v apparmor_parser >/dev/null ||
	{ echo "install-apparmor: apparmor_parser not found (apt-get install apparmor)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || [ -n "${APPARMOR_D:-}" ] ||
	{ echo "install-apparmor: run as root (it writes $dest_dir/sandcell)" >&2; exit 2; }

mkdir -p "$dest_dir"
tmp=$(mktemp "$dest_dir/.sandcell.XXXXXX")
trap 'rm -f "$tmp"' EXIT
sed "s|^profile sandcell /usr/local/bin/sandcell |profile sandcell $bin |" "$profile" >"$tmp"
grep -q "^profile sandcell $bin " "$tmp" || { echo "install-apparmor: could not set the path" >&2; exit 1; }
chmod 644 "$tmp"
mv "$tmp" "$dest_dir/sandcell"
trap - EXIT
echo "install-apparmor: wrote $dest_dir/sandcell for $bin" >&2
if [ -n "${APPARMOR_D:-}" ]; then
	echo "install-apparmor: APPARMOR_D set: not loading it" >&2
	exit 0
fi
apparmor_parser -r "$dest_dir/sandcell"
echo "install-apparmor: loaded; check with 'sandcell doctor'" >&2
