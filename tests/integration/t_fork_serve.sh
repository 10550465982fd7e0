#!/usr/bin/env bash
# Fork, checkpoints and rollback over HTTP (docs/fork.md): a real
# `sandcell serve` on loopback and a real client (Python's urllib,
# fork_serve_client.py). The children are cells of the server's table,
# made by its pool's workers with the server's spec; at the end nothing
# is left: no cell, no snapshot layer, no server.
# ctest-timeout: 600
. "$(dirname "$0")/../lib.sh"

TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
cp "$(dirname "$0")/fork_serve_client.py" "$T_DIR/"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
SERVER=
trap '[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER"; t_cleanup' EXIT

MAX=8
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 --max-cells "$MAX" --hostname fkhost >/dev/null 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

python3 "$T_DIR/fork_serve_client.py" "$URL" "$TOKEN" "$MAX"
RC=$?
check "fork, checkpoints and rollback over HTTP" expect_rc 0

# req METHOD PATH [JSON]: prints "STATUS BODY"
req() {
	python3 - "$URL" "$TOKEN" "$@" <<'PY'
import sys, urllib.request, urllib.error
url, tok, method, path = sys.argv[1:5]
data = sys.argv[5].encode() if len(sys.argv) > 5 else None
r = urllib.request.Request(url + path, data=data, method=method,
                           headers={"Authorization": "Bearer " + tok,
                                    "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(r, timeout=300) as f:
        print(f.status, f.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
body_get() { printf '%s' "${1#* }" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"; }

# A restarted server adopts the children (recorded and kept as POST
# /cells' cells are), a rolled-back one too, and their memory limit.
OUT=$(req POST /cells '{"memory_limit_MB": 100}')
P=$(body_get "$OUT" 'd["id"]')
req POST "/cells/$P/exec" '{"cmd": "echo kept > /testbed/k"}' >/dev/null
OUT=$(req POST "/cells/$P/fork" '{"count": 1}')
K=$(body_get "$OUT" 'd["cells"][0]["id"]')
req POST "/cells/$K/checkpoints" '{"tag": "r1"}' >/dev/null
req POST "/cells/$K/exec" '{"cmd": "echo changed > /testbed/k"}' >/dev/null
OUT=$(req POST "/cells/$K/rollback" '{"tag": "r1"}')
check "a child is forked and rolled back" bash -c 'case "$0" in "200 "*rolled_back*) ;; *) exit 1;; esac' "$OUT"
kill -KILL "$SERVER"
wait "$SERVER" 2>/dev/null
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 --max-cells "$MAX" --hostname fkhost >/dev/null 2>>"$T_WORK/serve.err" &
SERVER=$!
check "a server starts again on the root" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")
OUT=$(req GET /cells)
check "the new server has the parent and the child" \
	bash -c 'case "$0" in *"$1"*"$2"*|*"$2"*"$1"*) ;; *) exit 1;; esac' "$OUT" "$P" "$K"
OUT=$(req POST "/cells/$K/exec" '{"cmd": "cat /testbed/k"}')
check "the adopted child has the rolled-back file" bash -c 'case "$0" in "200 "*'"'"'"stdout":"kept\n"'"'"'*) ;; *) exit 1;; esac' "$OUT"
OUT=$(req GET "/cells/$K/checkpoints")
check "... and its checkpoint" bash -c 'case "$0" in "200 "*'"'"'"checkpoints":["r1"]'"'"'*) ;; *) exit 1;; esac' "$OUT"
BIG="python3 -c 'b = bytearray(300 << 20); print(len(b) >> 20)' 2>/dev/null; echo rc=\$?"
OUT=$(req POST "/cells/$K/fork" '{"count": 1}')
K2=$(body_get "$OUT" 'd["cells"][0]["id"]')
OUT=$(req POST "/cells/$K2/exec" "{\"cmd\": \"$BIG\"}")
check "a fork of it keeps the memory limit (memory_limit_MB 100: no 300 MiB)" \
	bash -c 'case "$0" in "200 "*rc=*) case "$0" in *'"'"'"stdout":"300\nrc=0'"'"'*) exit 1;; esac;; *) exit 1;; esac' "$OUT"
req DELETE "/cells/$K2" >/dev/null
req DELETE "/cells/$P" >/dev/null
req DELETE "/cells/$K" >/dev/null
OUT=$(req GET /cells)
check "both are deleted" bash -c 'case "$0" in "200 {\"cells\":[]}"*) ;; *) exit 1;; esac' "$OUT"

kill -TERM "$SERVER"
check "the server exits" wait_until gone_pid "$SERVER"
SERVER=
check "no cell is left" wait_until no_cells
check "no snapshot layer is left under the state root" \
	bash -c '! [ -e "$0/run/.snapshots" ] || [ -z "$(ls -A "$0/run/.snapshots")" ]' "$SANDCELL_ROOT"
check "no state directory of a cell is left" \
	bash -c '[ -z "$(find "$0/run" -mindepth 1 -maxdepth 1 -name "serve-*" 2>/dev/null)" ]' "$SANDCELL_ROOT"
check "no process is left" wait_until no_process_with "$SC_BIN serve --listen 127.0.0.1:0"
if [ "$T_FAILS" -ne 0 ]; then
	echo "--- serve.err"
	tail -20 "$T_WORK/serve.err"
fi
finish
