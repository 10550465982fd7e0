#!/usr/bin/env bash
# The cell's init keeps nothing of the host process's environment: read
# from the host side (as root, who may read any process's environ), a
# secret in sandcell's environment is in the parent's /proc/PID/environ
# (the control) and not in its init's, for run and for create; the cell's
# commands still get the environment the spec gives them.
. "$(dirname "$0")/../lib.sh"

CANARY="sk-canary-$$-$RANDOM$RANDOM"
export T_EXTRA_ENV="OPENAI_API_KEY=$CANARY ANTHROPIC_API_KEY=$CANARY"

environ_has() { [ -r "/proc/$1/environ" ] && tr '\0' '\n' <"/proc/$1/environ" | grep -qF -- "$2"; }
# The environ of a live process is readable (not empty by refusal) and
# lacks the canary.
environ_lacks() {
	local e
	e=$(tr '\0' '\n' <"/proc/$1/environ") || return 1
	[ -d "/proc/$1" ] && ! grep -qF -- "$CANARY" <<<"$e"
}

# --- run: the parent and its one child, the init ---
marker="sleep 4545.$$"
as_user_exec "$SC_BIN" run -- sh -c "exec $marker" </dev/null >/dev/null 2>&1 &
runner=$!
# The init is the command's parent (a short-lived helper of the runner,
# such as the id-map writer, can be its child for a moment too).
INIT=""
wait_until eval 'c=$(pgrep -f -- "^$marker" | head -1); [ -n "$c" ] && INIT=$(ps -o ppid= -p "$c" | tr -d " ") && [ -n "$INIT" ]'
check "run: the init is the runner's child" bash -c '[ "$(ps -o ppid= -p "$0" | tr -d " ")" = "$1" ]' "$INIT" "$runner"
check "run: the control: the canary is in the sandcell parent's environ" environ_has "$runner" "$CANARY"
check "run: the cell's init ($INIT) has no canary in its environ" environ_lacks "$INIT"
check "run: the init's environ holds no variable at all" \
	bash -c '[ -z "$(tr -d "\0" <"/proc/$0/environ")" ]' "$INIT"
cmd=$(pgrep -f -- "^$marker" | head -1)
check "run: the command has the spec's environment (PATH) and no canary" \
	bash -c 'tr "\0" "\n" <"/proc/$0/environ" | grep -q "^PATH=" && ! grep -qF "$1" "/proc/$0/environ"' "$cmd" "$CANARY"
kill -TERM "$runner"
wait "$runner" 2>/dev/null

# --- create: a kept cell's init, long after its creator exited ---
sc create envbox
check "create: exits 0" expect_rc 0
sc ps --json
pid=$(printf '%s\n' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("cells",d); print([c["pid"] for c in d if c["name"]=="envbox"][0])' 2>/dev/null)
check "create: ps shows the cell's init" bash -c '[ -n "$0" ] && [ -d "/proc/$0" ]' "$pid"
check "create: the cell's init has no canary in its environ" environ_lacks "$pid"
sc exec envbox -- sh -c 'cat /proc/1/environ 2>&1; env'
check "create: exec's command has no canary and the default PATH" \
	bash -c '! grep -qF "$1" <<<"$0" && grep -q "^PATH=" <<<"$0"' "$OUT" "$CANARY"
sc rm -f envbox
check "create: rm exits 0" expect_rc 0

finish
