#!/usr/bin/env bash
# A memory kill is reported as limit_hit "memory" wherever code runs: code
# run, code session run, and the API's /run_code and /cells/{id}/code, as
# `sandcell run` reports it (docs/code.md). What holds --memory here decides
# what is true: a cgroup's limit kills the program (137, limit_hit memory);
# the RLIMIT_AS stand-in refuses the allocation instead, nothing is killed
# and limit_hit stays null.
# ctest-timeout: 600
. "$(dirname "$0")/../lib.sh"

S=memsess$$
SERVE=
trap '[ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null; as_user "$SC_BIN" code session rm "$S" >/dev/null 2>&1; t_cleanup' EXIT

src() { # src NAME: write stdin to $T_DIR/NAME, readable by the test user
	cat >"$T_DIR/$1"
	chmod 644 "$T_DIR/$1"
}

sc doctor --json
mem_mech=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"]["memory"])')
case "$mem_mech" in
cgroup-v1 | cgroup-v2 | rlimit) ;;
*)
	check "doctor --json names the memory mechanism ('$mem_mech')" false
	exit
	;;
esac
echo "# memory mechanism: $mem_mech"

# 1 GiB in 16 MiB pieces, each written (bytes * n touches every page)
HOG='keep = []
for i in range(64):
    keep.append(b"x" * (16 << 20))
print("survived")
'
printf '%s' "$HOG" | src hog.py
export mem_mech

# mem_result WHAT: $OUT is one JSON result (SandboxFusion's shape) of the
# hog under a 128 MiB limit; check what the mechanism makes true.
mem_result() {
	local what=$1
	case "$mem_mech" in
	cgroup-v1 | cgroup-v2)
		check "$what ($mem_mech): killed at the limit, limit_hit is memory" bash -c \
			'[ "$(jget "d[\"status\"], d[\"limit_hit\"], d[\"run_result\"][\"return_code\"] != 0")" = "[\"Failed\", \"memory\", true]" ]'
		;;
	rlimit)
		check "$what (rlimit): the allocation is refused, nothing killed: limit_hit null" bash -c \
			'[ "$(jget "d[\"status\"], d[\"limit_hit\"]")" = "[\"Failed\", null]" ] && jget "d[\"run_result\"][\"stderr\"]" | grep -q MemoryError'
		;;
	esac
	check "$what: the program did not get past the limit" bash -c \
		'! jget "d[\"run_result\"][\"stdout\"]" | grep -q survived'
}
export -f mem_result

# --- code run ---
sc code run --lang python --memory 128M --json "$T_DIR/hog.py"
mem_result "code run"
printf 'import sys\nsys.exit(3)\n' | src exit3.py
sc code run --lang python --memory 128M --json "$T_DIR/exit3.py"
check "code run: a plain failure under the same limit has limit_hit null" bash -c \
	'[ "$(jget "d[\"status\"], d[\"limit_hit\"]")" = "[\"Failed\", null]" ]'

# --- code session run ---
sc code session start --memory 128M "$S"
check "a session with a 128M limit starts" expect_rc 0
sc code session run "$S" --json "$T_DIR/hog.py"
mem_result "session run"
sc code session run "$S" --json "$T_DIR/exit3.py"
check "session run: the next failure (no kill) has limit_hit null" bash -c \
	'[ "$(jget "d[\"status\"], d[\"limit_hit\"]")" = "[\"Failed\", null]" ]'
sc code session rm "$S"

# --- the API: /run_code and /cells/{id}/code ---
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVE=$!
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

# post PATH JSON: $OUT is the answer's body, RC 0 for a 200
post() {
	OUT=$(python3 - "$URL$1" "$TOKEN" "$2" <<'EOF'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], sys.argv[3].encode(), method="POST",
                             headers={"Authorization": "Bearer " + sys.argv[2],
                                      "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=300) as r:
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    sys.stdout.write(e.read().decode())
    sys.exit(1)
EOF
	)
	RC=$?
	export OUT RC
}
hog_json=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOG")

post /run_code "{\"code\": $hog_json, \"language\": \"python\", \"memory_limit_MB\": 128, \"run_timeout\": 120}"
check "/run_code answers 200" expect_rc 0
mem_result "/run_code"

post /cells '{"memory_limit_MB": 128}'
cid=$(jget 'd["id"]')
check "POST /cells with memory_limit_MB 128 makes a cell" bash -c '[ $RC -eq 0 ] && [ -n "$0" ]' "$cid"
post "/cells/$cid/code" "{\"code\": $hog_json, \"timeout\": 120}"
check "/cells/{id}/code answers 200" expect_rc 0
mem_result "/cells/{id}/code"
post "/cells/$cid/code" '{"code": "import sys; sys.exit(3)", "timeout": 120}'
check "/cells/{id}/code: the next failure (no kill) has limit_hit null" bash -c \
	'[ "$(jget "d[\"status\"], d[\"limit_hit\"]")" = "[\"Failed\", null]" ]'

kill "$SERVE"
wait "$SERVE" 2>/dev/null
SERVE=
check "no cell is left" no_cells
