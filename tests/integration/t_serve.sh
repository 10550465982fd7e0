#!/usr/bin/env bash
# sandcell serve: a real server on 127.0.0.1 (port 0, handed over through
# --port-file) and a real HTTP client (serve_client.py, urllib/http.client):
# the SandboxFusion contract (golden cases), auth on every route, cells over
# HTTP, concurrency (SERVE_CLIENTS x SERVE_REQUESTS, default 16 x 5; the
# issue's full size is SERVE_CLIENTS=64 SERVE_REQUESTS=20), hostile input,
# the 503 gate on a unix socket, and SIGTERM removing every cell.
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

CLIENT="$T_DIR/serve_client.py"
cp "$(dirname "$0")/serve_client.py" "$(dirname "$0")/serve_golden.json" "$T_DIR/"
chmod 644 "$T_DIR/serve_client.py" "$T_DIR/serve_golden.json"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"

alive_pid() { kill -0 "$1" 2>/dev/null; }
gone_pid() { ! kill -0 "$1" 2>/dev/null; }

# --- refused at start ---
sc serve --listen 127.0.0.1:0
check "a TCP listener without a token is refused (125)" expect_rc 125
check "... in one line" err_one_line
check "... saying a token is needed" err_has "needs a token"
sc serve --listen 0.0.0.0:0 --token-file "$T_WORK/token"
check "a non-loopback listener without TLS is refused (125)" expect_rc 125
check "... naming --tls-cert" err_has "tls-cert"
check "... and --insecure-plaintext" err_has "insecure-plaintext"
check "no cell was made by the refused starts" no_cells
sc serve --help
check "serve --help lists --listen" out_has "--listen ADDR"
check "serve --help lists --token-file" out_has "--token-file FILE"
check "serve --help keeps every option apart from its help (a long one on a line of its own)" \
	bash -c '! printf "%s" "$0" | grep -Eq "^  --[a-z-]+ [A-Z_]+[a-z]"' "$OUT"

# --- the main server ---
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 4 --max-concurrency 128 --connection-timeout 3 \
	>"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server writes its port" wait_until test -s "$T_WORK/port"
PORT=$(cat "$T_WORK/port")
URL=http://127.0.0.1:$PORT
check "it says where it listens on stderr" grep -q "listening on 127.0.0.1:$PORT" "$T_WORK/serve.err"

client() { # client SUBCOMMAND ARGS...: the client's lines are the test's
	python3 "$CLIENT" "$URL" "$TOKEN" "$@"
}
nocpp=
command -v g++ >/dev/null 2>&1 || nocpp=--no-cpp
check "golden SandboxFusion contract cases" client golden "$T_DIR/serve_golden.json" $nocpp
check "auth: 401 on every route without the token" client auth
check "cells over HTTP" client cells
check "a cell whose init died: 410, and DELETE" client gone
check "streamed exec (ndjson)" client stream
plots=
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && plots=--plots
check "code sessions in a cell" client code $plots
# /run_code of code that picks Agg itself (as model-written code does)
# still returns its plt.show() as one PNG
run_code_agg_plot() {
	python3 - "$URL/run_code" "$TOKEN" <<'EOF'
import base64, json, sys, urllib.request
src = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 3])\nplt.show()\n"
req = urllib.request.Request(sys.argv[1], json.dumps({"code": src, "language": "python", "run_timeout": 120}).encode(),
                             {"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"})
d = json.load(urllib.request.urlopen(req, timeout=300))
p = d.get("plots") or []
assert d["status"] == "Success" and len(p) == 1, {k: d.get(k) for k in ("status", "run_result", "plots")}
assert base64.b64decode(p[0]["content_base64"])[:8] == b"\x89PNG\r\n\x1a\n"
EOF
}
if [ -n "$plots" ]; then
	check "/run_code: matplotlib.use('Agg') then plt.show() gives one PNG" run_code_agg_plot
else
	echo "skip - /run_code plots (no matplotlib in the cell's python3)"
fi
check "code of any language in a cell (/run), streamed" client run $nocpp
check "a directory as a tar stream" client tar
check "the links it left out are logged, without naming cp's --keep-links (the API has none)" \
	bash -c 'grep -q "left out .* symlink" "$0" && ! grep -q -- "--keep-links" "$0"' "$T_WORK/serve.err"
check "pool cells load the Python support module as bytecode" client bytecode 10
check "concurrency" client concurrency "${SERVE_CLIENTS:-16}" "${SERVE_REQUESTS:-5}"
check "hostile input" client hostile
check "one JSON log line per request" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(lines) > 100, len(lines)
assert all({"method", "path", "status", "ms"} <= set(l) for l in lines if "event" not in l)
assert any(l.get("status") == 401 for l in lines)' "$T_WORK/serve.log"
check "the token is not in the log" bash -c '! grep -q "$0" "$1"' "$TOKEN" "$T_WORK/serve.log"

# SIGTERM: drains and removes every cell it made (the pool's too).
sc ps --json
check "the server's pool cells exist while it runs" bash -c \
	'printf "%s" "$OUT" | python3 -c "import json,sys; assert len(json.load(sys.stdin)) >= 1"'
# a request in flight when SIGTERM comes is answered (drain)
python3 "$CLIENT" "$URL" "$TOKEN" slow >"$T_WORK/slow.out" 2>&1 &
SLOW=$!
running() { sc ps --json; printf '%s' "$OUT" | python3 -c 'import json,sys; sys.exit(0 if any(c["running_commands"] > 0 for c in json.load(sys.stdin)) else 1)'; }
check "the slow request is running" wait_until running
kill -TERM "$SERVER"
wait "$SLOW"
check "the request in flight at SIGTERM is answered" grep -q "^ok   - the request in flight" "$T_WORK/slow.out"
check "SIGTERM: the server exits" wait_until gone_pid "$SERVER"
wait "$SERVER"
RC=$?
check "... with status 0" expect_rc 0
check "... and no cell is left" wait_until no_cells
check "... and no pool worker is left" wait_until no_process_with "$SC_BIN serve --listen 127.0.0.1:0"

# --- SIGTERM with --drain-timeout 3: what still runs then is cancelled ---
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 --drain-timeout 3 >/dev/null 2>"$T_WORK/serve6.err" &
SERVER6=$!
check "a server with --drain-timeout 3 starts" wait_until test -s "$T_WORK/port"
python3 "$CLIENT" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" drain >"$T_WORK/drain.out" 2>&1 &
DRAIN=$!
running2() { sc ps --json; printf '%s' "$OUT" | python3 -c 'import json,sys; sys.exit(0 if sum(c["running_commands"] > 0 for c in json.load(sys.stdin)) >= 2 else 1)'; }
check "an exec and a /run_code of 120 s run" wait_until running2
t0=$(date +%s%N)
kill -TERM "$SERVER6"
check "SIGTERM: the server exits" wait_until gone_pid "$SERVER6"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# exited ${ms} ms after SIGTERM (--drain-timeout 3, requests of 120 s)"
check "... within 60 s of SIGTERM, not when the requests end" [ "$ms" -lt 60000 ]
wait "$DRAIN"
check "the requests in flight got an answer or a closed connection" bash -c '! grep -q "^FAIL" "$0"' "$T_WORK/drain.out"
cat "$T_WORK/drain.out"
check "... and no cell is left" wait_until no_cells

# --- a unix socket, no token, --max-concurrency 1 ---
SOCK="$T_WORK/api.sock"
as_user_exec "$SC_BIN" serve --listen "unix:$SOCK" --pool 1 --max-concurrency 1 \
	>"$T_WORK/serve2.log" 2>"$T_WORK/serve2.err" &
SERVER2=$!
check "the unix socket appears" wait_until test -S "$SOCK"
check "the socket is mode 0600" bash -c '[ "$(stat -c %a "$1")" = 600 ]' _ "$SOCK"
check "503 (504 on /run_code) with Retry-After when full; the unix socket needs no token" \
	python3 "$CLIENT" "unix:$SOCK" - busy
kill -TERM "$SERVER2"
check "SIGTERM: the second server exits" wait_until gone_pid "$SERVER2"
check "... removing its socket" bash -c '! test -e "$1"' _ "$SOCK"
check "... and its cells" wait_until no_cells

# --- TLS (libmicrohttpd's GnuTLS) ---
if command -v openssl >/dev/null 2>&1; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$T_WORK/key.pem" -out "$T_WORK/cert.pem" 2>/dev/null
	chmod 644 "$T_WORK/key.pem" "$T_WORK/cert.pem"
	rm -f "$T_WORK/port"
	as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
		--port-file "$T_WORK/port" --pool 1 --tls-cert "$T_WORK/cert.pem" --tls-key "$T_WORK/key.pem" \
		>/dev/null 2>"$T_WORK/serve4.err" &
	SERVER4=$!
	check "a TLS server starts" wait_until test -s "$T_WORK/port"
	check "TLS" python3 "$CLIENT" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" tls "$T_WORK/cert.pem"
	kill -TERM "$SERVER4"
	check "the TLS server exits" wait_until gone_pid "$SERVER4"
	check "... leaving no cell" wait_until no_cells
else
	echo "skip - TLS (no openssl)"
fi

# --- connections whose fds are above 1024 (select's FD_SETSIZE) ---
# started with the usual soft limit of 1024 open files: the server raises it
# for its maxima (1400 connections x 6 + 64 cells + 128), up to the hard limit.
# The 1100 connections, idle, come from one peer (loopback): that peer may
# hold all of them, and for longer than the usual head timeout.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 4096 ]; then
	rm -f "$T_WORK/port"
	as_user_exec bash -c 'ulimit -Sn 1024 && exec "$@"' _ "$SC_BIN" serve --listen 127.0.0.1:0 \
		--token-file "$T_WORK/token" --port-file "$T_WORK/port" --pool 1 --max-connections 1400 \
		--max-connections-per-peer 1400 --head-timeout 300 \
		>/dev/null 2>"$T_WORK/serve5.err" &
	SERVER5=$!
	check "a server started with ulimit -Sn 1024 starts" wait_until test -s "$T_WORK/port"
	want=$((1400 * 6 + 64 + 128))
	[ "$hard" != unlimited ] && [ "$hard" -lt "$want" ] && want=$hard
	check "... and raised its soft open-file limit to $want" bash -c \
		'[ "$(awk "/^Max open files/ { print \$4 }" "/proc/$0/limits")" -ge "$1" ]' "$SERVER5" "$want"
	check "connections with fds above 1024 are served" \
		python3 "$CLIENT" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" fds 1100
	kill -TERM "$SERVER5"
	check "... and that server exits" wait_until gone_pid "$SERVER5"
	check "... leaving no cell" wait_until no_cells
else
	echo "skip - connections above fd 1024 (hard RLIMIT_NOFILE $hard)"
fi

# --- SIGKILL leaves nothing that gc cannot remove ---
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >/dev/null 2>&1 &
SERVER3=$!
check "a third server starts" wait_until test -s "$T_WORK/port"
kill -KILL "$SERVER3"
wait "$SERVER3" 2>/dev/null
check "SIGKILL: the pool's workers go too" wait_until no_process_with "$SC_BIN serve --listen 127.0.0.1:0"
sc gc
check "... and after gc no cell is left" wait_until no_cells

# SIGKILL during a directory PUT: its temporary tree is left (and gc takes it)
mkdir -p "$T_WORK/tmp"
chmod 1777 "$T_WORK/tmp"
rm -f "$T_WORK/port"
T_EXTRA_ENV="TMPDIR=$T_WORK/tmp" as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 \
	--token-file "$T_WORK/token" --port-file "$T_WORK/port" --pool 1 >/dev/null 2>&1 &
SERVER7=$!
check "a server for a large PUT starts" wait_until test -s "$T_WORK/port"
# 15,000 files of 512 bytes (under the 16 MiB of a files PUT): unpacking
# and copying take seconds, so the polling below cannot miss the tree
python3 "$CLIENT" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" bigput 15 >/dev/null 2>&1 &
PUT=$!
check "the PUT's temporary tree appears" wait_until bash -c '[ -n "$(find "$0" -name "sandcell-files-*" -o -path "*/serve-tmp/files-*" 2>/dev/null)" ]' "$T_WORK"
kill -KILL "$SERVER7"
wait "$SERVER7" 2>/dev/null
wait "$PUT"
# The PUT's cell (POST /cells) outlives the killed server, for the next
# one on the root (t_serve_restart.sh); the pool's cells go.
one_cell() { sc ps --json; [ "$(jget 'len(d)')" = 1 ]; }
check "SIGKILL during the PUT: only the PUT's cell is left, for the next server" wait_until one_cell
T_EXTRA_ENV="TMPDIR=$T_WORK/tmp" sc gc
check "... gc succeeds" expect_rc 0
check "... and no temporary tree is left" bash -c '[ -z "$(find "$0" -name "sandcell-files-*" -o -path "*/serve-tmp/files-*" 2>/dev/null)" ]' "$T_WORK"
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >/dev/null 2>&1 &
SERVER8=$!
check "a server starts again on the root" wait_until test -s "$T_WORK/port"
kill -TERM "$SERVER8"
wait "$SERVER8" 2>/dev/null
check "... and, stopped, leaves no cell" wait_until no_cells
check "... and no process" wait_until no_process_with "$SC_BIN serve --listen 127.0.0.1:0"

finish
