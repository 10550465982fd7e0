#!/usr/bin/env bash
# volume_mounts in POST /cells: a real `sandcell serve` on loopback and a
# real client (Python's urllib). A root server mounts the volume into the
# pool cell it hands out; an unprivileged one says it cannot (its cells
# cannot take a mount once made) and hands out no cell.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

V=tsv$$
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
SERVER=
trap '[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER"; as_user "$SC_BIN" volume rm "$V" >/dev/null 2>&1; t_cleanup' EXIT

sc volume create --size 16M "$V"
check "volume create" expect_rc 0

as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >/dev/null 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

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
    with urllib.request.urlopen(r, timeout=120) as f:
        print(f.status, f.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}

MOUNT="{\"volume_mounts\": [{\"name\": \"$V\", \"path\": \"/data\"}]}"
if [ "$SANDCELL_TEST_AS" = nobody ]; then
	OUT=$(req POST /cells "$MOUNT")
	check "rootless: volume_mounts is refused with 501, saying why" \
		bash -c 'case "$0" in "501 "*"only by root"*) ;; *) exit 1;; esac' "$OUT"
	OUT=$(req GET /cells)
	check "rootless: no cell was handed out" bash -c 'case "$0" in "200 {\"cells\":[]}"*) ;; *) exit 1;; esac' "$OUT"
	finish
	exit
fi

OUT=$(req POST /cells "$MOUNT")
check "POST /cells with volume_mounts answers 201" bash -c '[ "${0%% *}" = 201 ]' "$OUT"
ID=$(printf '%s' "${OUT#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
OUT=$(req POST "/cells/$ID/exec" '{"cmd": "echo from-api > /data/f && stat -c %u /data/f"}')
check "the cell's root writes the volume" bash -c 'printf "%s" "$0" | grep -q "\"stdout\":\"0\\\\n\""' "$OUT"
sc volume inspect --json "$V"
VPATH=$(jget "d['path']")
check "the host sees the file in the volume" [ "$(cat "$VPATH/f")" = from-api ]
check "volume inspect names the pool cell" [ "$(jget "len(d['cells'])")" = 1 ]
OUT=$(req POST /cells "{\"volume_mounts\": [{\"name\": \"$V\", \"path\": \"/ro\", \"read_only\": true}]}")
ID2=$(printf '%s' "${OUT#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id",""))')
OUT=$(req POST "/cells/$ID2/exec" '{"cmd": "cat /ro/f; echo x > /ro/g"}')
check "a read_only mount reads and refuses writes" \
	bash -c 'printf "%s" "$0" | grep -q "from-api" && printf "%s" "$0" | grep -q "Read-only file system"' "$OUT"

# a fork and a rollback mount the same volumes (shared, not copied)
OUT=$(req POST "/cells/$ID/fork" '{"count": 1}')
K=$(printf '%s' "${OUT#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cells"][0].get("id",""))')
OUT=$(req POST "/cells/$K/exec" '{"cmd": "cat /data/f && echo from-kid > /data/k"}')
check "a fork of the cell has its volume" bash -c 'printf "%s" "$0" | grep -q "\"stdout\":\"from-api"' "$OUT"
check "the same volume: the host sees the child's file" [ "$(cat "$VPATH/k" 2>/dev/null)" = from-kid ]
OUT=$(req POST "/cells/$ID2/fork" '{"count": 1}')
K2=$(printf '%s' "${OUT#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cells"][0].get("id",""))')
OUT=$(req POST "/cells/$K2/exec" '{"cmd": "cat /ro/k; echo x > /ro/h"}')
check "a fork of a read_only mount reads it and cannot write it" \
	bash -c 'printf "%s" "$0" | grep -q "from-kid" && printf "%s" "$0" | grep -q "Read-only file system"' "$OUT"
req POST "/cells/$ID/checkpoints" '{"tag": "v"}' >/dev/null
OUT=$(req POST "/cells/$ID/rollback" '{"tag": "v"}')
check "a rollback of the cell" bash -c '[ "${0%% *}" = 200 ]' "$OUT"
OUT=$(req POST "/cells/$ID/exec" '{"cmd": "cat /data/k"}')
check "mounts its volume again" bash -c 'printf "%s" "$0" | grep -q "\"stdout\":\"from-kid"' "$OUT"
req DELETE "/cells/$K" >/dev/null
req DELETE "/cells/$K2" >/dev/null

sc volume rm "$V"
check "volume rm is refused while the cells mount it" bash -c '[ "$RC" -ne 0 ] && printf "%s" "$ERR" | grep -q "in use"'

OUT=$(req POST /cells '{"volume_mounts": [{"name": "nosuch-vol", "path": "/data"}]}')
check "a volume that does not exist: 404" bash -c 'case "$0" in "404 "*"no volume"*) ;; *) exit 1;; esac' "$OUT"
OUT=$(req POST /cells "{\"volume_mounts\": [{\"name\": \"$V\", \"path\": \"/a/../b\"}]}")
check "a path with '..': 422" bash -c '[ "${0%% *}" = 422 ]' "$OUT"
OUT=$(req POST /cells "{\"volume_mounts\": [{\"name\": \"../x\", \"path\": \"/b\"}]}")
check "a bad volume name: 422" bash -c '[ "${0%% *}" = 422 ]' "$OUT"

# a restarted server keeps the cells but not where their volumes are: it
# refuses to fork one rather than make a child without them
kill -KILL "$SERVER"
wait "$SERVER" 2>/dev/null
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >/dev/null 2>>"$T_WORK/serve.err" &
SERVER=$!
check "a server starts again on the root" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")
OUT=$(req POST "/cells/$ID/fork" '{"count": 1}')
check "it refuses to fork an adopted cell with volumes: 409, saying why" \
	bash -c 'case "$0" in "409 "*"mount points"*) ;; *) exit 1;; esac' "$OUT"
OUT=$(req POST "/cells/$ID/exec" '{"cmd": "cat /data/f"}')
check "the adopted cell still has its volume" bash -c 'printf "%s" "$0" | grep -q "from-api"' "$OUT"

req DELETE "/cells/$ID" >/dev/null
req DELETE "/cells/$ID2" >/dev/null
vol_rm() { sc volume rm "$V"; [ "$RC" -eq 0 ]; }
check "once the cells are deleted the volume can be removed" wait_until vol_rm
check "its directory is gone" [ ! -e "$VPATH" ]
kill -TERM "$SERVER"
check "the server exits" wait_until gone_pid "$SERVER"
SERVER=
finish
