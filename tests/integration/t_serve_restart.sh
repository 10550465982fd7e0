#!/usr/bin/env bash
# A restart loses nothing (docs/api.md, "Restarts"): a server with 50 cells
# of POST /cells and 16 clients in flight (exec on those cells, /run_code)
# is killed with SIGKILL and started again on the same state root. The new
# one adopts the 50 (same ids, token, idle timeouts and files), the pool's
# and /run_code's cells are gone, a second server on the root is refused,
# and once the cells are deleted and the server stopped nothing is left:
# no cell in `sandcell ps`, no process of theirs, no mount under the root,
# no cgroup of theirs.
# ctest-timeout: 600
. "$(dirname "$0")/../lib.sh"

CLIENT="$T_DIR/restart_client.py"
cp "$(dirname "$0")/restart_client.py" "$CLIENT"
chmod 644 "$CLIENT"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
NODE="rs$$"
NCELLS=50
CLIENTS=16

SERVER=
LOADER=
stop_all() {
	[ -n "$LOADER" ] && kill -KILL "$LOADER" 2>/dev/null
	[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	t_cleanup
}
trap stop_all EXIT

# start_server K: a server in the background (SERVER), up when its port is written
start_server() {
	rm -f "$T_WORK/port$1"
	as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
		--port-file "$T_WORK/port$1" --node-name "$NODE" --pool 2 --max-cells 64 \
		--max-concurrency 64 --cell-idle-timeout 3600 \
		>"$T_WORK/serve$1.log" 2>"$T_WORK/serve$1.err" &
	SERVER=$!
	wait_until test -s "$T_WORK/port$1"
}
# names of the test user's cells (sandcell ps --json), one a line
cell_names() {
	as_user "$SC_BIN" ps --json | python3 -c 'import json,sys; [print(c["name"]) for c in json.load(sys.stdin)]'
}
count_prefix() { cell_names | grep -c "^$1" || true; }

start_server 1
check "the first server is up" test -s "$T_WORK/port1"
OLD=$SERVER
URL=http://127.0.0.1:$(cat "$T_WORK/port1")
check "$NCELLS cells made, each with a file and a timeout of its own" \
	python3 "$CLIENT" "$URL" "$TOKEN" create "$NCELLS" "$T_WORK/cells.json"

# --- SIGKILL under load ---
python3 "$CLIENT" "$URL" "$TOKEN" load "$T_WORK/cells.json" "$CLIENTS" "$T_WORK/count" \
	>"$T_WORK/load.out" 2>&1 &
LOADER=$!
# under way: the clients have done some requests, and /run_code cells of
# the pool are held beside the 50 (more than 50 cells of this server)
enough_load() { [ -s "$T_WORK/count" ] && [ "$(cat "$T_WORK/count")" -ge $((2 * CLIENTS)) ]; }
check "$CLIENTS clients are under way" wait_until enough_load
more_than_cells() { [ "$(count_prefix "serve-$OLD-")" -gt "$NCELLS" ]; }
check "the server holds more cells than the $NCELLS (its pool's, /run_code's)" wait_until more_than_cells
kill -KILL "$OLD"
wait "$OLD" 2>/dev/null
check "the clients end with the killed server" wait_until eval '! kill -0 $LOADER 2>/dev/null'
wait "$LOADER" 2>/dev/null
LOADER=
cat "$T_WORK/load.out"

# --- the restart ---
start_server 2
NEW=$SERVER
check "a new server starts on the same root" test -s "$T_WORK/port2"
URL=http://127.0.0.1:$(cat "$T_WORK/port2")
check "it logs the adoption" grep -q "\"event\":\"restart\",\"adopted\":$NCELLS," "$T_WORK/serve2.log"
check "same ids, token, timeouts and files" python3 "$CLIENT" "$URL" "$TOKEN" verify "$T_WORK/cells.json"
sc ps --json
check "exactly the $NCELLS adopted cells are left of the killed server (pool and /run_code ones gone)" \
	[ "$(count_prefix "serve-$OLD-")" -eq "$NCELLS" ]
check "and no other cell but the new server's" \
	[ "$(cell_names | grep -vc -e "^serve-$OLD-" -e "^serve-$NEW-")" -eq 0 ]
# (where the host gives cells cgroups, the check at the end can fail: say
# how many it sees now)
echo "# cgroups of the adopted cells while they run: $(find /sys/fs/cgroup -maxdepth 7 -type d -name "serve-$OLD-*" 2>/dev/null | wc -l)"
INITS=$(as_user "$SC_BIN" ps --json | python3 -c 'import json,sys; print(" ".join(str(c["pid"]) for c in json.load(sys.stdin) if c["pid"]))')

# --- a second server on the root ---
sc serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" --node-name "$NODE" --pool 1
check "a second server on the same root is refused (125)" expect_rc 125
check "... saying which server holds it" err_has "another sandcell serve (pid $NEW) uses the state root"
check "... in one line" err_one_line
check "the first goes on" python3 -c 'import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + "/v1/ping")' "$URL"
# an --ephemeral server (the Python client's private ones) may share the root
rm -f "$T_WORK/porte"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" --ephemeral \
	--port-file "$T_WORK/porte" --pool 1 >/dev/null 2>"$T_WORK/servee.err" &
EPH=$!
check "an --ephemeral server starts beside it on the root" wait_until test -s "$T_WORK/porte"
kill -TERM "$EPH"
wait "$EPH"
RC=$?
check "... and stops (0)" expect_rc 0
check "... leaving the adopted cells alone" [ "$(count_prefix "serve-$OLD-")" -eq "$NCELLS" ]

# --- delete, stop: nothing left ---
check "the adopted cells are deleted" python3 "$CLIENT" "$URL" "$TOKEN" delete "$T_WORK/cells.json"
kill -TERM "$NEW"
wait "$NEW"
RC=$?
SERVER=
check "the server stops on SIGTERM (0)" expect_rc 0
check "no cell is left (sandcell ps --json)" no_cells
inits_gone() { for p in $INITS; do [ ! -d "/proc/$p" ] || return 1; done; }
check "no init of the cells is left" wait_until inits_gone
check "no mount under the state root" bash -c '! grep -q -- " $0" /proc/self/mountinfo' "$SANDCELL_ROOT"
no_cgroups() {
	[ -z "$(find /sys/fs/cgroup -maxdepth 7 -type d \( -name "serve-$OLD-*" -o -name "serve-$NEW-*" \) 2>/dev/null | head -3)" ]
}
check "no cgroup of the cells is left" wait_until no_cgroups
check "no record is left" bash -c '[ -z "$(ls -A "$0")" ]' "$SANDCELL_ROOT/run/.serve/cells"

# --- the rule's other side: a server with another token adopts nothing ---
start_server 3
OLD=$SERVER
URL=http://127.0.0.1:$(cat "$T_WORK/port3")
check "two cells made on a third server" python3 "$CLIENT" "$URL" "$TOKEN" create 2 "$T_WORK/two.json"
kill -KILL "$OLD"
wait "$OLD" 2>/dev/null
printf '%s\n' "other-$TOKEN" >"$T_WORK/token"
start_server 4
NEW=$SERVER
check "a server with another token starts on the root" test -s "$T_WORK/port4"
check "it adopts neither cell, saying why" \
	[ "$(grep -c '"event":"cell_not_adopted".*"reason":"made under another token"' "$T_WORK/serve4.log")" -eq 2 ]
check "... and removes them" [ "$(count_prefix "serve-$OLD-")" -eq 0 ]
kill -TERM "$NEW"
wait "$NEW"
SERVER=
check "... and, stopped, leaves no cell" no_cells

finish
