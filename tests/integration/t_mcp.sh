#!/usr/bin/env bash
# sandcell mcp: the protocol by hand (versions, notifications, bad JSON, an
# unknown method, an over-long line, ids that are not ids, SIGTERM removing
# a session's cell),
# then the official MCP TypeScript SDK client (mcp_client.mjs: tools, python
# and javascript, exit codes, a timeout, a session's state, a plot as PNG,
# files, closing, an unknown tool), and no cell left after it disconnects.
# The SDK is installed with npm (cached in /var/tmp/sandcell-test-npm by
# version); no node or no npm registry: skipped (77).
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

SDK_VERSION=1.32.2

gone_pid() { ! kill -0 "$1" 2>/dev/null; }
# lines_ok PY: every answer line is JSON and PY (an expression over `r`,
# the list of parsed lines) holds
lines_ok() {
	printf '%s\n' "$OUT" | python3 -c 'import json,sys
r=[json.loads(l) for l in sys.stdin if l.strip()]
ok=eval(sys.argv[1])
if not ok: print(r, file=sys.stderr)
sys.exit(0 if ok else 1)' "$1"
}

# --- the protocol by hand ---
cat >"$T_DIR/raw.in" <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":"two","method":"initialize","params":{"protocolVersion":"1999-01-01"}}
{not json
{"jsonrpc":"2.0","id":3,"method":"resources/list"}
{"jsonrpc":"2.0","id":4,"method":"ping"}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_language_details","arguments":{"language":7}}}
EOF
# a 17 MiB line, then a ping that must still be answered
python3 -c 'import sys; sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{\"x\":\"" + "a"*(17<<20) + "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\n")' >>"$T_DIR/raw.in"
chmod 644 "$T_DIR/raw.in"
o=$(mktemp "$T_DIR/out.XXXXXX")
e=$(mktemp "$T_DIR/err.XXXXXX")
chmod 666 "$o" "$e"
as_user "$SC_BIN" mcp <"$T_DIR/raw.in" >"$o" 2>"$e"
RC=$?
OUT=$(cat "$o")
ERR=$(cat "$e")
check "mcp exits 0 when stdin ends" expect_rc 0
check "one answer per request, none for notifications" lines_ok 'len(r) == 9'
check "a supported protocol version is echoed" lines_ok 'r[0]["id"] == 1 and r[0]["result"]["protocolVersion"] == "2024-11-05" and "tools" in r[0]["result"]["capabilities"]'
check "an unknown protocol version gets the latest" lines_ok 'r[1]["id"] == "two" and r[1]["result"]["protocolVersion"] == "2025-11-25"'
check "bad JSON is -32700 with id null" lines_ok 'r[2]["error"]["code"] == -32700 and r[2]["id"] is None'
check "an unknown method is -32601" lines_ok 'r[3]["id"] == 3 and r[3]["error"]["code"] == -32601'
check "ping answers {}" lines_ok 'r[4] == {"jsonrpc": "2.0", "id": 4, "result": {}}'
check "an unknown tool is a JSON-RPC error -32602" lines_ok 'r[5]["id"] == 5 and r[5]["error"]["code"] == -32602'
check "a wrong argument type is a tool error" lines_ok 'r[6]["id"] == 6 and r[6]["result"]["isError"] is True'
check "an over-long line is -32700, and the next one is answered" lines_ok 'r[7]["error"]["code"] == -32700 and r[8] == {"jsonrpc": "2.0", "id": 10, "result": {}}'
check "stdout holds JSON-RPC only" lines_ok 'all(x.get("jsonrpc") == "2.0" for x in r)'

# an id that is an object, an array or a boolean: an invalid request
# (-32600) answered with id null, not taken for a notification
cat >"$T_DIR/badid.in" <<'EOF'
{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}
{"jsonrpc":"2.0","id":[1],"method":"ping"}
{"jsonrpc":"2.0","id":true,"method":"tools/list"}
{"jsonrpc":"2.0","id":false,"method":"ping"}
{"jsonrpc":"2.0","id":null,"method":"ping"}
{"jsonrpc":"2.0","id":7,"method":"ping"}
EOF
chmod 644 "$T_DIR/badid.in"
as_user "$SC_BIN" mcp <"$T_DIR/badid.in" >"$o" 2>"$e"
RC=$?
OUT=$(cat "$o")
ERR=$(cat "$e")
check "mcp with bad ids exits 0 when stdin ends" expect_rc 0
check "an object, array or boolean id: -32600 with id null, one answer each" lines_ok \
	'len(r) == 6 and all(x["id"] is None and x["error"]["code"] == -32600 for x in r[:4])'
check "... and a null or number id is still answered" lines_ok \
	'r[4] == {"jsonrpc": "2.0", "id": None, "result": {}} and r[5] == {"jsonrpc": "2.0", "id": 7, "result": {}}'

# --- SIGTERM removes a session's cell ---
mkfifo "$T_DIR/term.in"
chmod 666 "$T_DIR/term.in"
: >"$T_DIR/term.out"
chmod 666 "$T_DIR/term.out"
(as_user_exec "$SC_BIN" mcp <"$T_DIR/term.in" >"$T_DIR/term.out" 2>"$T_DIR/term.err") &
MPID=$!
exec 3>"$T_DIR/term.in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_session","arguments":{}}}' >&3
has_session() { grep -q session_id "$T_DIR/term.out"; }
check "a session starts (under a held-open stdin)" wait_until has_session
sc ps --json
check "its cell is listed" out_has '"mcp-'
kill -TERM "$MPID"
check "SIGTERM ends the server" wait_until gone_pid "$MPID"
wait "$MPID"
RC=$?
exec 3>&-
check "it exits 0 on SIGTERM" expect_rc 0
check "SIGTERM removed the session's cell" wait_until no_cells

# --- the official SDK client ---
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "skip: node and npm are needed for the MCP SDK client"
	exit 77
fi
CACHE=/var/tmp/sandcell-test-npm/sdk-$SDK_VERSION
if [ ! -f "$CACHE/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	mkdir -p /var/tmp/sandcell-test-npm
	(
		flock 9
		if [ ! -f "$CACHE/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
			scratch=$(mktemp -d "$T_DIR/npm.XXXXXX")
			(cd "$scratch" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
				"@modelcontextprotocol/sdk@$SDK_VERSION" >"$scratch/log" 2>&1) &&
				rm -rf "$CACHE.tmp" && mkdir -p "$CACHE.tmp" && mv "$scratch/node_modules" "$CACHE.tmp/" &&
				mv "$CACHE.tmp" "$CACHE" || cat "$scratch/log" >&2
		fi
	) 9>/var/tmp/sandcell-test-npm/lock
fi
if [ ! -f "$CACHE/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	echo "skip: npm could not install @modelcontextprotocol/sdk@$SDK_VERSION"
	exit 77
fi
NODE_DIR="$T_DIR/node"
mkdir -p "$NODE_DIR"
ln -s "$CACHE/node_modules" "$NODE_DIR/node_modules"
cp "$(dirname "$0")/mcp_client.mjs" "$NODE_DIR/"
# The server as the test user. The SDK's close() ends stdin, then sends
# SIGTERM and SIGKILL 2 s apart; the wrapper stays in between so that
# the server itself is not killed while it removes the cells, and the
# test waits for it below.
if [ "$SANDCELL_TEST_AS" = nobody ]; then
	ASU="setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent"
else
	ASU="env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root"
fi
cat >"$T_DIR/mcp_server.sh" <<EOF
#!/bin/bash
$ASU SANDCELL_ROOT="$SANDCELL_ROOT" "$SC_BIN" mcp <&0 2>>"$T_DIR/sdk.err" &
echo \$! >"$T_DIR/server.pid"
wait
EOF
chmod 755 "$T_DIR/mcp_server.sh"
CLIENT_OUT=$(cd "$NODE_DIR" && timeout 800 node mcp_client.mjs "$T_DIR/mcp_server.sh" 2>&1)
CRC=$?
printf '%s\n' "$CLIENT_OUT" | grep -v -e '^ok ' -e '^FAIL ' | sed 's/^/# /'
while IFS= read -r line; do
	case "$line" in
	"ok   - "*) pass "${line#ok   - }" ;;
	"FAIL - "*) fail "${line#FAIL - }" ;;
	esac
done <<<"$CLIENT_OUT"
check "the SDK client ran to the end" bash -c '[ "$0" -eq 0 ] && grep -qx done <<<"$1"' "$CRC" "$CLIENT_OUT"
SPID=$(cat "$T_DIR/server.pid" 2>/dev/null || echo 0)
check "the server exits after the client disconnects" wait_until gone_pid "$SPID"
check "no cell is left after the client disconnects" wait_until no_cells
sed 's/^/# server: /' "$T_DIR/sdk.err" | tail -20
finish
