#!/usr/bin/env bash
# ctest-timeout: 600
# POST /cells naming its own image (serve --allow-images, --allow-pull):
# a stored image by name; a registry reference pulled once from an allowed
# registry (Debian's docker-registry on loopback) however many requests
# wait for it, refused from any other; each image's cells from a pool of
# its own made by the pool host; forks of such a cell on its image; nothing
# left after the server stops.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/registry_lib.sh"

python3 "$TOOL" oci "$R/two"
sc image import "$R/two" two
check "the test image is imported" expect_rc 0
REF="127.0.0.1:$P_PLAIN/imgs/two:1"
sc image push two "$REF" --insecure
check "... and pushed to the plain registry" expect_rc 0
BASIC_REF="127.0.0.1:$P_BASIC/imgs/two:1"

TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
SERVER=
start_serve() {
	rm -f "$T_WORK/port"
	as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
		--port-file "$T_WORK/port" --pool 1 "$@" >"$T_WORK/serve.out" 2>"$T_WORK/serve.err" &
	SERVER=$!
	wait_until test -s "$T_WORK/port"
	URL=http://127.0.0.1:$(cat "$T_WORK/port")
}
stop_serve() {
	kill -TERM "$SERVER" 2>/dev/null
	wait_until gone_pid "$SERVER"
}
trap 'kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; stop_servers' EXIT
# post PATH BODY: the status, then the body
post() { curl -sS -o "$T_WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST "$URL$1" -d "$2"; }
body() { cat "$T_WORK/body"; }
id_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T_WORK/body"; }
# run_in ID CMD: the command's stdout
run_in() {
	curl -sS -H "Authorization: Bearer $TOKEN" -X POST "$URL/cells/$1/exec" \
		-d "$(python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$2")" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"], end="")'
}

# --- without --allow-images: the server's image only, as before ---
start_serve
check "a server starts" test -n "$URL"
check "without --allow-images another image is refused (422)" \
	bash -c '[ "$0" = 422 ] && grep -q "makes cells of image" "$1"' "$(post /cells '{"image": "two"}')" "$T_WORK/body"
stop_serve

# --- --allow-images: stored images by name, references only if stored ---
start_serve --allow-images
st=$(post /cells '{"image": "two"}')
check "a cell of stored image 'two' (201)" [ "$st" = 201 ]
ID=$(id_of)
check "... it runs in that image: its files, its env" \
	[ "$(run_in "$ID" 'ls /opq >/dev/null && echo "$IMAGE_VAR"')" = "from-image" ]
st=$(post /cells '{}')
check "a cell of the server's own image still comes (201)" [ "$st" = 201 ]
HOST_ID=$(id_of)
check "... and it is not the other image" [ "$(run_in "$HOST_ID" 'echo "${IMAGE_VAR:-none}"')" = none ]
st=$(post /cells '{"image": "nosuch"}')
check "an image not in the store: 404" bash -c '[ "$0" = 404 ] && grep -q "nosuch" "$1"' "$st" "$T_WORK/body"
st=$(post /cells "{\"image\": \"$REF\"}")
check "a reference not stored, with no --allow-pull: 403 that says so" \
	bash -c '[ "$0" = 403 ] && grep -q -- "--allow-pull" "$1"' "$st" "$T_WORK/body"
st=$(post /cells '{"image": "a b"}')
check "a name that is neither a store name nor a reference: 422" [ "$st" = 422 ]
st=$(post "/cells/$ID/fork" '{"count": 2}')
check "a fork of the image's cell (200)" [ "$st" = 200 ]
KID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cells"][0]["id"])' "$T_WORK/body" 2>/dev/null)
check "... whose child is of the same image" [ "$(run_in "$KID" 'echo "$IMAGE_VAR"')" = from-image ]
SB=$(curl -sS -H "X-API-KEY: $TOKEN" -X POST "$URL/sandboxes" -d '{"templateID": "two"}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null)
check "an E2B sandbox of template 'two' (the image's name)" test -n "$SB"
check "... runs in that image" [ "$(run_in "$SB" 'echo "$IMAGE_VAR"')" = from-image ]
# E2B's snapshots (the calls Sandbox.createSnapshot, listSnapshots and
# deleteSnapshot make): an image of the sandbox's files, a template for more
e2b() { curl -sS -o "$T_WORK/body" -w '%{http_code}' -H "X-API-KEY: $TOKEN" "$@"; }
run_in "$SB" 'echo made-in-sandbox > /work/note.txt' >/dev/null
st=$(e2b -X POST "$URL/sandboxes/$SB/snapshots" -d '{"name": "snap1"}')
check "createSnapshot: 201 with the snapshot's id and name" \
	bash -c '[ "$0" = 201 ] && grep -q "\"snapshotID\":\"snap1\",\"names\":\[\"snap1\"\]" "$1"' "$st" "$T_WORK/body"
st=$(e2b -X POST "$URL/sandboxes/$SB/snapshots" -d '{"name": "snap1"}')
check "... again under the same name: 409" [ "$st" = 409 ]
SB2=$(curl -sS -H "X-API-KEY: $TOKEN" -X POST "$URL/sandboxes" -d '{"templateID": "snap1"}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null)
check "a sandbox made from the snapshot has the file and the image's env" \
	[ "$(run_in "$SB2" 'cat /work/note.txt; echo "$IMAGE_VAR"')" = "$(printf 'made-in-sandbox\nfrom-image')" ]
st=$(e2b "$URL/snapshots?sandboxID=$SB")
check "listSnapshots of the sandbox: snap1" bash -c '[ "$0" = 200 ] && grep -q "\"snapshotID\":\"snap1\"" "$1"' "$st" "$T_WORK/body"
st=$(e2b "$URL/snapshots?sandboxID=$SB2")
check "... of another sandbox: none" bash -c '[ "$0" = 200 ] && [ "$(cat "$1")" = "[]" ]' "$st" "$T_WORK/body"
check "deleteSnapshot while a sandbox uses it: refused (409)" [ "$(e2b -X DELETE "$URL/templates/snap1")" = 409 ]
e2b -X DELETE "$URL/sandboxes/$SB2" >/dev/null
check "... once none does (its pool's ready cell going too): 204, then 404" \
	bash -c '[ "$(curl -s -o /dev/null -w "%{http_code}" -H "X-API-KEY: $1" -X DELETE "$0/templates/snap1")" = 204 ] &&
		[ "$(curl -s -o /dev/null -w "%{http_code}" -H "X-API-KEY: $1" -X DELETE "$0/templates/snap1")" = 404 ]' "$URL" "$TOKEN"
check "an image that is no snapshot is not deleted there (404)" [ "$(e2b -X DELETE "$URL/templates/two")" = 404 ]
st=$(e2b -X POST "$URL/sandboxes/$HOST_ID/snapshots" -d '{}')
check "a snapshot of a cell that is no sandbox: 404" [ "$st" = 404 ]
# a server killed: the next one adopts the cell, which still forks in its image
kill -KILL "$SERVER"
wait_until gone_pid "$SERVER"
start_serve --allow-images
check "a new server adopts the image's cell" \
	bash -c 'curl -sS -H "Authorization: Bearer $1" "$2/cells" | grep -q "\"$0\""' "$ID" "$TOKEN" "$URL"
st=$(post "/cells/$ID/fork" '{}')
KID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cells"][0]["id"])' "$T_WORK/body" 2>/dev/null)
check "... and forks it in its image" bash -c '[ "$0" = 200 ] && [ "$1" = from-image ]' "$st" "$(run_in "$KID" 'echo "$IMAGE_VAR"')"
stop_serve
check "the server stops, leaving no cell" wait_until no_cells

# --- --allow-pull: a reference pulled once, from allowed registries only ---
# (--store-max 1: after the pull, every image no cell uses and no pool
# holds goes; 'two' was last opened over 2 s before, which trims respect)
sleep 3
start_serve --allow-pull "127.0.0.1:$P_PLAIN" --pull-insecure --store-max 1
for i in 1 2 3; do
	curl -sS -o "$T_WORK/pull.$i" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST "$URL/cells" \
		-d "{\"image\": \"$REF\"}" >"$T_WORK/pull.$i.status" &
done
wait_three() { for i in 1 2 3; do [ "$(cat "$T_WORK/pull.$i.status" 2>/dev/null)" = 201 ] || return 1; done; }
check "three cells of a reference asked for at once all come (201)" wait_until wait_three
check "... from one pull (one \"pulled\" event in the log)" \
	[ "$(grep -c "\"event\":\"pulled\",\"image\":\"$REF\"" "$T_WORK/serve.out")" = 1 ]
PID1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T_WORK/pull.1")
check "... in the pulled image" [ "$(run_in "$PID1" 'echo "$IMAGE_VAR"')" = from-image ]
st=$(post /cells "{\"image\": \"$BASIC_REF\"}")
check "a registry --allow-pull does not name: 403" [ "$st" = 403 ]
sc image ls --json
check "--store-max: the pull evicted the image no cell used ('two'), kept the pulled one" \
	bash -c '! grep -q "\"name\":\"two\"" <<<"$0" && grep -q "_two_1-" <<<"$0"' "$OUT"
check "... and said so in the log" grep -q '"event":"store_trimmed","evicted":[1-9]' "$T_WORK/serve.out"
stop_serve
check "the server stops, leaving no cell" wait_until no_cells
no_serve_left() { ! pgrep -f "^$SC_BIN serve" >/dev/null; }
check "... and no process of it (the pool host and its workers are gone)" wait_until no_serve_left
finish
