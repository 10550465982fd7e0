#!/usr/bin/env bash
# sandcell serve against slow clients (issue #29): 256 connections from
# loopback that send their request head one line every 5 s without a token,
# and 16 with the token that send a body one byte every 2 s, all
# reconnecting when dropped, for SERVE_SLOW_SECONDS (default 60); meanwhile
# a client on the same address must get every answer to /v1/ping (each
# second) and to /run_code (every 5 s). The server runs with its defaults
# (256 connections, half of them per peer, 16 requests at once).
# ctest-timeout: 420
. "$(dirname "$0")/../lib.sh"

CLIENT="$T_DIR/serve_client.py"
cp "$(dirname "$0")/serve_client.py" "$T_DIR/"
chmod 644 "$CLIENT"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"

gone_pid() { ! kill -0 "$1" 2>/dev/null; }

as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server starts" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

# the attacker's 272 threads and sockets, and the client's
ulimit -n 4096 2>/dev/null || true
check "slow heads and slow bodies do not keep a client out" \
	python3 "$CLIENT" "$URL" "$TOKEN" slow-attack "${SERVE_SLOW_SECONDS:-60}" 256 16
check "the server still runs" kill -0 "$SERVER"
check "its warnings about the attack are a few summary lines, not one per connection" \
	bash -c '[ "$(grep -c . "$0")" -lt 100 ]' "$T_WORK/serve.err"
kill -TERM "$SERVER"
check "SIGTERM: the server exits" wait_until gone_pid "$SERVER"
check "... leaving no cell" wait_until no_cells

# --- a small per-peer cap: room made from a connection that sends no head,
# a 503 when there is none ---
rm -f "$T_WORK/port"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 --max-connections-per-peer 2 >/dev/null 2>&1 &
SERVER=$!
check "a server with --max-connections-per-peer 2 starts" wait_until test -s "$T_WORK/port"
check "--max-connections-per-peer" \
	python3 "$CLIENT" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" peer-cap
kill -TERM "$SERVER"
check "... that server exits" wait_until gone_pid "$SERVER"
check "... leaving no cell" wait_until no_cells

finish
