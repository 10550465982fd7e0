# Shared helpers for the shell test suites (integration, security).
# Each test script runs twice under ctest: SANDCELL_TEST_AS=root and
# SANDCELL_TEST_AS=nobody. Everything the unprivileged run needs is copied
# into a world-readable temporary directory, so the checkout's own path
# (which may be root-only in CI) does not matter.
set -u
# The system's tools only (e.g. Debian's python3, not a pyenv shim).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

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

# Run a command as the test user with a clean environment. In a subshell,
# as_user_exec replaces the subshell with it (so that $! of
# `as_user_exec CMD &` is CMD's own pid).
as_user_exec() { AS_USER_EXEC=exec as_user "$@"; }
as_user() {
	local x=${AS_USER_EXEC:-}
	if [ "$SANDCELL_TEST_AS" = nobody ]; then
		$x setpriv --reuid=65534 --regid=65534 --clear-groups \
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent \
			SANDCELL_ROOT="$SANDCELL_ROOT" ${T_EXTRA_ENV:-} "$@"
	else
		$x env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
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
	echo "       rc=${RC:-}"
	echo "       stdout: $(printf '%s' "${OUT:-}" | head -c 600)"
	echo "       stderr: $(printf '%s' "${ERR:-}" | head -c 600)"
}

# wait_until CMD...: poll CMD every 0.1 s for up to WAIT_S seconds (120;
# by the clock: a check may itself be slow on a loaded machine), then
# once more; its status.
wait_until() {
	local end=$((SECONDS + ${WAIT_S:-120}))
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}
# no_cells: the test user has no cell left (sandcell ps --json is []).
no_cells() {
	sc ps --json
	[ "$RC" -eq 0 ] && [ "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 0 ]
}
# jget EXPR: EXPR (Python, over d = the JSON in $OUT); a string as it is,
# anything else as JSON.
jget() {
	printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v) if not isinstance(v,str) else v, end="")' "$1"
}
# free_port: a TCP port on 127.0.0.1 that was free a moment ago.
free_port() { python3 -S -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export -f wait_until no_cells jget free_port

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

# A process whose command line begins with the marker: the command itself,
# not the sandcell client that was given it as an argument.
has_command() {
	pgrep -f -- "^$1" >/dev/null 2>&1
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

# --- security suite (tests/security) ---
# The hostile programs live in tests/security/attacks/*.c; build_attacks
# compiles the named ones (static, so they run in any image) into
# $T_DIR/attacks, which run_attack binds into the cell at /attacks, read-only.
# NAME_preload.c files become shared objects (NAME_preload.so) for
# LD_PRELOAD. No compiler or no static libc: the test is skipped (77).
# A program that does not compile fails the test.
ATTACKS="$T_DIR/attacks"
build_attacks() {
	local src
	src="$(cd "$(dirname "$0")" && pwd)/attacks"
	mkdir -p "$ATTACKS"
	chmod 755 "$ATTACKS"
	if ! printf 'int main(void){return 0;}\n' | gcc -static -x c -o "$ATTACKS/.probe" - 2>/dev/null; then
		echo "SKIP: gcc -static does not work here (install gcc and libc6-dev)"
		exit 77
	fi
	rm -f "$ATTACKS/.probe"
	local name pids=() failed=0
	for name in "$@"; do
		if [ "${name%_preload}" != "$name" ]; then
			gcc -shared -fPIC -O2 -o "$ATTACKS/$name.so" "$src/$name.c" &
		else
			gcc -static -O2 -o "$ATTACKS/$name" "$src/$name.c" &
		fi
		pids+=($!)
	done
	for name in "${pids[@]}"; do
		wait "$name" || failed=1
	done
	if [ "$failed" -ne 0 ]; then
		echo "FAIL - the attack programs do not compile"
		exit 1
	fi
	chmod 755 "$ATTACKS"/*
}

# run_attack [SANDCELL OPTIONS] -- /attacks/PROG CASE [ARGS]: runs it in a
# one-shot cell under the default policy with the attacks bound in
# (--timeout 20 comes first, so a later --timeout wins), shows what it
# tried, and sets RC/OUT/ERR.
run_attack() {
	sc run --policy default --timeout 20 -v "$ATTACKS:/attacks:ro" "$@"
	show_attack
}

show_attack() {
	printf '%s\n' "$OUT" | sed 's/^/#   /'
	[ -z "$ERR" ] || printf '%s\n' "$ERR" | grep -v '^sandcell: warning: limits are weaker' | sed 's/^/#   stderr: /'
}

# The attack ran, tried something, and every attempt was blocked.
attack_blocked() {
	[ "$RC" -eq 0 ] && out_has '^ATTEMPT: ' && out_has '^RESULT: BLOCKED' && ! out_has '^ESCAPED: '
}

# Content and metadata of a host file: sha256, mode, owner, size, mtime,
# extended attributes.
host_file_state() {
	python3 - "$1" <<'PY'
import hashlib, os, sys
p = sys.argv[1]
st = os.stat(p, follow_symlinks=False)
h = hashlib.sha256(open(p, "rb").read()).hexdigest()
try:
    xa = sorted(os.listxattr(p, follow_symlinks=False))
except OSError:
    xa = []
print(h, oct(st.st_mode), st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, xa)
PY
}

# Mount points of the host's mount namespace (this test's, i.e. the host's).
host_mountpoints() {
	cut -d' ' -f5 /proc/self/mountinfo | sort -u
}

# Subordinate ids for the unprivileged test user (rootless mmdebstrap,
# --mode=unshare, needs them), added by the harness as root before it drops
# privileges: "nobody:1879048192:65536" in /etc/subuid and /etc/subgid, the
# first 64K block after systemd's container range (524288-1879048191, where
# sandcell's own cells map) and below 2^31, a range no user and no cell
# uses. Idempotent (an existing nobody/65534 entry is kept), atomic (a new
# file renamed over the old, under a lock, as concurrent tests may do the
# same), and left in place: only processes that run as nobody can map the
# range, and no file on the host belongs to it. Fails when it cannot.
T_SUBID_START=1879048192
T_SUBID_COUNT=65536
give_test_user_subids() {
	[ "$(id -u)" = 0 ] || return 1
	local f
	(
		flock 9
		for f in /etc/subuid /etc/subgid; do
			[ -e "$f" ] || { touch "$f" && chmod 644 "$f"; } || exit 1
			grep -qsE '^(nobody|65534):' "$f" && continue
			{ cat "$f"; echo "nobody:$T_SUBID_START:$T_SUBID_COUNT"; } >"$f.sandcell-test.$$" &&
				chmod 644 "$f.sandcell-test.$$" && mv "$f.sandcell-test.$$" "$f" || exit 1
		done
	) 9>/run/sandcell-test-subid.lock
}
