# Shared helpers for the shell test suites (integration, security).
# Each test script runs twice under ctest: SANDCELL_TEST_AS=root and
# SANDCELL_TEST_AS=nobody. Everything the unprivileged run needs is copied
# into a world-readable temporary directory, so the checkout's own path
# (which may be root-only in CI) does not matter.
set -u

: "${SANDCELL:?SANDCELL must point at the sandcell binary}"
: "${SANDCELL_TEST_AS:=root}"

T_FAILS=0
T_PASSES=0
T_NAME=$(basename "$0" .sh)

T_DIR=$(mktemp -d /tmp/sandcell-test.XXXXXX)
chmod 755 "$T_DIR"
cp "$SANDCELL" "$T_DIR/sandcell"
chmod 755 "$T_DIR/sandcell"
SC_BIN="$T_DIR/sandcell"
# Scratch space owned by the test user, and a private sandcell root.
T_WORK="$T_DIR/work"
mkdir -p "$T_WORK"
if [ "$SANDCELL_TEST_AS" = nobody ]; then
	T_UID=65534
	chown 65534:65534 "$T_WORK"
else
	T_UID=0
fi
export SANDCELL_ROOT="$T_WORK/root"

t_cleanup() {
	rm -rf "$T_DIR" 2>/dev/null || true
}
trap t_cleanup EXIT

# Run a command as the test user with a clean environment.
as_user() {
	if [ "$SANDCELL_TEST_AS" = nobody ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent \
			SANDCELL_ROOT="$SANDCELL_ROOT" ${T_EXTRA_ENV:-} "$@"
	else
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			SANDCELL_ROOT="$SANDCELL_ROOT" ${T_EXTRA_ENV:-} "$@"
	fi
}

# sc ARGS...: run sandcell as the test user; sets OUT, ERR and RC.
sc() {
	local o e
	o=$(mktemp "$T_DIR/out.XXXXXX")
	e=$(mktemp "$T_DIR/err.XXXXXX")
	chmod 666 "$o" "$e"
	as_user "$SC_BIN" "$@" >"$o" 2>"$e" </dev/null
	RC=$?
	export RC
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
	export OUT ERR
}

pass() { T_PASSES=$((T_PASSES + 1)); echo "ok   - $*"; }
fail() {
	T_FAILS=$((T_FAILS + 1))
	echo "FAIL - $*"
	echo "       rc=$RC"
	echo "       stdout: $(printf '%s' "${OUT:-}" | head -c 600)"
	echo "       stderr: $(printf '%s' "${ERR:-}" | head -c 600)"
}

# check DESCRIPTION CONDITION...: passes when the condition command succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

expect_rc() { [ "$RC" -eq "$1" ]; }
out_is() { [ "$OUT" = "$1" ]; }
out_has() { printf '%s' "$OUT" | grep -q -- "$1"; }
err_has() { printf '%s' "$ERR" | grep -q -- "$1"; }
err_one_line() { [ "$(printf '%s\n' "$ERR" | grep -c .)" -eq 1 ]; }

# JSON field of $OUT, through python3's parser.
json_field() {
	# usable from bash -c subshells too: export OUT first
	printf '%s' "$OUT" | python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(json.dumps(v) if not isinstance(v,str) else v, end="")' "$1"
}

has_process_with() {
	pgrep -f -- "$1" >/dev/null 2>&1
}

# No process of the test user whose command line contains the marker.
no_process_with() {
	! pgrep -f -- "$1" >/dev/null 2>&1
}

finish() {
	echo "# $T_NAME ($SANDCELL_TEST_AS): $T_PASSES passed, $T_FAILS failed"
	[ "$T_FAILS" -eq 0 ]
}
export -f json_field
