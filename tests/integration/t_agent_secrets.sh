#!/usr/bin/env bash
# sandcell agent: a model that goes looking for the host's files and for
# the API key finds neither, and the key never reaches the run's records.
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

KEY="sk-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# The model knows where the file is and what the secret starts with (the
# scenario greps for that prefix), not the secret itself.
export HOST_SECRET_WORD="host-secret-"
SECRET="host-secret-$$-$RANDOM$RANDOM"
export HOST_SECRET_FILE="$T_WORK/secret-$$.txt"
echo "$SECRET" >"$HOST_SECRET_FILE"
chmod 644 "$HOST_SECRET_FILE"
# Canaries where the host image does show the host's files (its /etc):
# world-readable, so that only the image's masks keep them from the cell.
MASKED_CANARY=""
if [ "$SANDCELL_TEST_AS" = root ]; then
	# where a root user keeps things
	echo "$SECRET" >"/root/.sandcell-agent-secret-$$"
	MADE_SUDOERS_D=""
	if [ ! -e /etc/sudoers.d ] && mkdir -m 755 /etc/sudoers.d; then
		MADE_SUDOERS_D=1 # (removed again below)
	fi
	if [ -d /etc/sudoers.d ]; then
		MASKED_CANARY="/etc/sudoers.d/sandcell-test-$$"
		echo "$SECRET" >"$MASKED_CANARY"
		chmod 644 "$MASKED_CANARY"
	fi
fi

T_EXTRA_ENV="OPENAI_API_KEY=$KEY" agent hostfiles host_files -q "find secrets"
rm -f "/root/.sandcell-agent-secret-$$"
if [ -n "$MASKED_CANARY" ]; then
	check "the control: the canary in /etc/sudoers.d is readable by anyone on the host" \
		setpriv --reuid=65534 --regid=65534 --clear-groups grep -q "$SECRET" "$MASKED_CANARY"
	rm -f "$MASKED_CANARY"
	[ -z "$MADE_SUDOERS_D" ] || rmdir /etc/sudoers.d
fi
check "the episode runs to the end" expect_rc 0
check "the answer is the model's" out_is no-luck
qtrue "cat of the host file fails inside the cell" '"No such file or directory" in obs[0]'
qtrue "the editor cannot view the host file either" '"does not exist" in obs[1]'
qtrue "searching the cell's /etc /root /home /tmp /opt finds nothing" \
	'"searched" in obs[2] and "'"$SECRET"'" not in obs[2]'
check "the host secret is nowhere in what the run wrote" bash -c '! grep -rq "$0" "$1"' "$SECRET" "$RUN"

# the key: sent to the server, never to the cell, never written down
qtrue "the key was sent to the model server as a bearer token" \
	'all(r["headers"].get("authorization") == "Bearer '"$KEY"'" for r in log)'
# (inside, /proc/1/environ is refused: init is not dumpable; the host side
# is checked below)
qtrue "the cell's commands' environment has no key (env)" \
	'"'"$KEY"'" not in obs[3] and "PATH=" in obs[3]'
check "the key is not in events.jsonl, though the server echoed it" \
	bash -c '! grep -q "$0" "$1" && grep -q "auth=Bearer \*\*\*\*" "$1"' "$KEY" "$RUN/events.jsonl"
check "the key is not in trajectory.json" bash -c '! grep -q "$0" "$1"' "$KEY" "$RUN/trajectory.json"
check "the key is not in anything the run wrote" bash -c '! grep -rq "$0" "$1"' "$KEY" "$RUN"
check "the key is not on stdout or stderr" bash -c '! grep -q "$0" <<<"$1$2"' "$KEY" "$OUT" "$ERR"

# a key in a variable named with --api-key-env
T_EXTRA_ENV="MY_LLM_KEY=$KEY" agent keyenv solve -q --api-key-env MY_LLM_KEY "sum"
qtrue "--api-key-env: the key from that variable is used" \
	'all(r["headers"].get("authorization") == "Bearer '"$KEY"'" for r in log)'
T_EXTRA_ENV="" sc agent --model m --api-key-env NOT_SET_ANYWHERE "p"
check "--api-key-env naming an unset variable is an error" \
	bash -c '[ "$0" -eq 125 ] && grep -q NOT_SET_ANYWHERE <<<"$1"' "$RC" "$ERR"

# the kept cell's init, read from the host side (root may read any
# process's environ): the key is not there
T_EXTRA_ENV="OPENAI_API_KEY=$KEY" agent kept solve -q --keep "sum"
check "--keep: the episode runs and keeps its cell" expect_rc 0
sc ps --json
KEPT=$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("cells",d); c=[c for c in d if c["name"].startswith("agent-")]; print(c[0]["name"], c[0]["pid"])' 2>/dev/null)
kept_pid=${KEPT#* }
kept_environ_clean() {
	local e
	[ -n "$kept_pid" ] && [ -d "/proc/$kept_pid" ] || return 1
	e=$(tr '\0' '\n' <"/proc/$kept_pid/environ") || return 1
	! grep -qF -- "$KEY" <<<"$e"
}
check "the kept cell's init ($KEPT) has no key in its environ, read from the host" kept_environ_clean
[ -z "$KEPT" ] || sc rm -f "${KEPT% *}"

# --- what the model leaves in /testbed cannot point out of the cell ---
agent symlinks symlink_out -q "leave symlinks"
check "symlinks: the episode submits" expect_rc 0
check "symlinks: an answer.txt that is a symlink is not followed or kept" \
	bash -c '[ ! -e "$0/answer.txt" ] && [ ! -L "$0/answer.txt" ] && [ -z "$1" ]' "$RUN" "$OUT"
check "symlinks: a symlink out of /testbed/output is left out of the copy, not the host file" \
	bash -c '[ ! -e "$0/files/shadow-link" ] && [ ! -L "$0/files/shadow-link" ]' "$RUN"
check "symlinks: ... with one line saying so" \
	bash -c 'grep -q "left out 1 symlink pointing outside the copied tree (files/shadow-link -> /etc/shadow)" <<<"$0"' "$ERR"
agent bigfiles symlink_out -q --files-limit 1M "too much output"
check "files limit: the episode still submits" expect_rc 0
qtrue "files limit: the copy stopped at the limit and the reason is recorded" \
	'any("size limit" in e.get("files_error", "") for e in ev if e["type"] == "collect")'
check "files limit: no more than the limit reached the host" \
	bash -c '[ "$(du -sb "$0/files" 2>/dev/null | cut -f1 || echo 0)" -le $((1024 * 1024 + 65536)) ]' "$RUN"

check "no cell is left behind" no_cells_left
finish
