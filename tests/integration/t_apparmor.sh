#!/usr/bin/env bash
# The AppArmor profile for hosts that restrict user namespaces
# (packaging/apparmor/sandcell) and scripts/install-apparmor.sh: the
# profile parses (apparmor_parser -Q, nothing loaded) and the script writes
# it for the given binary. Whether a restricted Ubuntu host then lets
# sandcell create its namespaces is NOT tested here (this host does not
# restrict them).
. "$(dirname "$0")/../lib.sh"

command -v apparmor_parser >/dev/null ||
	{ echo "skip: apparmor_parser not found (scripts/setup.sh installs Debian's apparmor)"; exit 77; }

SRC="$SRCDIR/packaging/apparmor/sandcell"
AA="$T_DIR/apparmor.d"

# Debian 12's parser is AppArmor 3.0, which predates the userns rule (4.0)
# and its abi file: it checks the rest of the profile, the rule is checked
# only by a parser of 4.0 or later.
ver=$(apparmor_parser --version | sed -n '1s/.*version \([0-9]*\).*/\1/p')
parse() {
	local f=$1
	if [ "${ver:-0}" -lt 4 ]; then
		grep -q '^  userns,$' "$f" || return 1
		grep -q '^abi <abi/4.0>,$' "$f" || return 1
		sed -e 's|^abi <abi/4.0>,|abi <abi/3.0>,|' -e '/^  userns,$/d' "$f" >"$T_DIR/parse.tmp"
		f="$T_DIR/parse.tmp"
	fi
	apparmor_parser -Q -K "$f"
}
[ "${ver:-0}" -lt 4 ] && echo "# apparmor_parser $ver: the userns rule itself is checked only by AppArmor >= 4"

check "the shipped profile parses" parse "$SRC"
check "... and names the default install path" grep -q '^profile sandcell /usr/local/bin/sandcell flags=(unconfined) {$' "$SRC"

APPARMOR_D="$AA" bash "$SRCDIR/scripts/install-apparmor.sh" "$SC_BIN" 2>"$T_DIR/err"
RC=$?
check "install-apparmor.sh writes the profile (APPARMOR_D)" test "$RC" -eq 0 -a -f "$AA/sandcell"
check "... for the given binary's real path" grep -q "^profile sandcell $(readlink -f "$SC_BIN") flags=(unconfined) {$" "$AA/sandcell"
check "... which parses" parse "$AA/sandcell"

ln -s "$SC_BIN" "$T_DIR/link"
APPARMOR_D="$AA" bash "$SRCDIR/scripts/install-apparmor.sh" "$T_DIR/link" 2>/dev/null
check "a symlink is resolved (AppArmor matches the real path)" grep -q "^profile sandcell $(readlink -f "$SC_BIN") " "$AA/sandcell"

APPARMOR_D="$AA" bash "$SRCDIR/scripts/install-apparmor.sh" "/nonexistent/sandcell" 2>"$T_DIR/err"
RC=$?
check "a missing binary is refused" test "$RC" -eq 2
check "... saying why" grep -q "is not an executable" "$T_DIR/err"

finish
