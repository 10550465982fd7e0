#!/usr/bin/env bash
# A web app in a cell, opened by a real browser. The cell (no network)
# serves a page whose script talks back over a WebSocket; headless Chromium
# opens it through `-p`, through serve's /cells/ID/ports/PORT/ proxy and by
# host name (serve --domain: PORT-ID.DOMAIN, E2B's getHost), and the
# screenshot shows the page rendered and the round trip done. A Python
# WebSocket client checks the relay itself (the 101's accept, 300 KiB
# messages, the close) and who gets in: the server's token, the cell's
# port token (header, ?token=, the cookie a browser gets), nothing else.
# ctest-timeout: 400
. "$(dirname "$0")/../lib.sh"

CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	echo "# SKIP: chromium is not installed (scripts/packages.txt lists it; setup.sh installs it)"
	exit 77
fi
FIX="$T_DIR/ws_fixture.py"
cp "$(dirname "$0")/ws_fixture.py" "$FIX"
cp "$(dirname "$0")/report_browser.py" "$T_DIR/report_browser.py"
chmod 644 "$FIX" "$T_DIR/report_browser.py"
ART="$(dirname "$SANDCELL")/test-artifacts"
mkdir -p "$ART"
SHOTS="$T_DIR/shots"
mkdir -p "$SHOTS"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
ws_client() { python3 "$FIX" client "$@" 2>&1 | tail -1; }
# browse NAME URL: Chromium opens URL; NAME.json is what it saw, NAME.png its screenshot
browse() {
	python3 "$T_DIR/report_browser.py" "$CHROMIUM" "$2" "$SHOTS/$1.json" \
		--screenshot "$SHOTS/$1.png" --width 900 --height 400 --timeout 120 >/dev/null 2>&1
	cp "$SHOTS/$1.png" "$ART/ports_browser_$1_$SANDCELL_TEST_AS.png" 2>/dev/null
}
round_trip_shown() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["state"]
assert d["ready"] == "done" and d["title"] == "round trip: echo: ping from the browser", d' "$SHOTS/$1.json" &&
		[ "$(python3 "$FIX" green "$SHOTS/$1.png")" -gt 500 ]
}
APP=$(cat "$FIX")
export APP

# --- through -p: the host's loopback port to the cell's ---
c="pb$$"
sc create -p 0:8000 "$c"
check "create -p 0:8000" expect_rc 0
sc port "$c"
HP=$(printf '%s' "$OUT" | sed -n 's#^8000/tcp -> 127\.0\.0\.1:\([0-9]*\)$#\1#p')
as_user "$SC_BIN" exec "$c" -- python3 -c "$APP" server 8000 >/dev/null 2>&1 &
APP_PID=$!
page_up() { curl -fsS "http://127.0.0.1:$HP/" 2>/dev/null | grep -q "Served from a sandcell cell"; }
check "the cell's app answers through -p" wait_until page_up
check "a WebSocket through -p: 101, 300 KiB both ways, close" [ "$(ws_client "ws://127.0.0.1:$HP/ws")" = ok ]
browse p "http://127.0.0.1:$HP/"
check "Chromium through -p: the page rendered and the WebSocket round trip shown" round_trip_shown p
kill "$APP_PID" 2>/dev/null
sc rm -f "$c"

# --- through serve, by path and by host name ---
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 --domain sandcell.localhost >/dev/null 2>"$T_WORK/serve.err" &
SERVER=$!
trap 'kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; t_cleanup' EXIT
check "the server writes its port" wait_until test -s "$T_WORK/port"
SP=$(cat "$T_WORK/port")
URL=http://127.0.0.1:$SP
api() { curl -sS -H "Authorization: Bearer $TOKEN" "$@"; }
ID=$(api -X POST "$URL/cells" -d '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
check "a cell" test -n "$ID"
B64=$(base64 -w0 "$FIX")
api -X POST "$URL/cells/$ID/exec" -d "{\"cmd\": \"echo $B64 | base64 -d > /tmp/app.py && (setsid python3 /tmp/app.py server 8000 >/dev/null 2>&1 </dev/null &)\"}" >/dev/null
served() { api "$URL/cells/$ID/ports/8000/" 2>/dev/null | grep -q "Served from a sandcell cell"; }
check "the cell's app answers through the proxy" wait_until served

P="$URL/cells/$ID/ports/8000"
W="ws://127.0.0.1:$SP/cells/$ID/ports/8000"
check "a WebSocket through the proxy (server token): 101, 300 KiB both ways, close" \
	[ "$(ws_client "$W/ws" "Authorization: Bearer $TOKEN")" = ok ]
check "... with ?token=" [ "$(ws_client "$W/ws?token=$TOKEN")" = ok ]
check "... without a token: 401, no switch" bash -c '[[ "$0" == "no switch: HTTP/1.1 401"* ]]' "$(ws_client "$W/ws")"
check "... to a port where nothing listens: 502 that says so" \
	bash -c '[[ "$0" == *502*"nothing listens on port 8001"* ]]' "$(ws_client "ws://127.0.0.1:$SP/cells/$ID/ports/8001/ws" "Authorization: Bearer $TOKEN")"
PIDS=()
for i in 1 2 3 4; do
	python3 "$FIX" client "$W/ws?token=$TOKEN" >"$T_DIR/ws.$i" 2>&1 &
	PIDS+=($!)
done
wait "${PIDS[@]}"
check "four WebSockets at once" bash -c 'for i in 1 2 3 4; do [ "$(tail -1 "$0/ws.$i")" = ok ] || exit 1; done' "$T_DIR"

browse path "$P/?token=$TOKEN"
check "Chromium through the proxy's path: the page rendered and the round trip shown" round_trip_shown path

H="8000-$ID.sandcell.localhost:$SP"
status() { curl -s -o /dev/null -w '%{http_code}' --resolve "8000-$ID.sandcell.localhost:$SP:127.0.0.1" "$@"; }
check "by host name, without a token: 401" [ "$(status "http://$H/")" = 401 ]
check "... with the server's token: 200" [ "$(status -H "Authorization: Bearer $TOKEN" "http://$H/")" = 200 ]
COOKIE=$(curl -s -D - -o /dev/null --resolve "8000-$ID.sandcell.localhost:$SP:127.0.0.1" "http://$H/?token=$TOKEN" |
	sed -n 's/^Set-Cookie: sandcell_port=\([0-9a-f]*\); Path=\/; HttpOnly; SameSite=Lax\r$/\1/p')
check "?token= sets the cell's port token as an HttpOnly cookie" bash -c '[ ${#0} -eq 32 ]' "$COOKIE"
check "... which opens the cell's ports" [ "$(status -H "Cookie: sandcell_port=$COOKIE" "http://$H/")" = 200 ]
check "... also as e2b-traffic-access-token" [ "$(status -H "e2b-traffic-access-token: $COOKIE" "http://$H/")" = 200 ]
check "... but not the API" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $COOKIE" "$URL/cells")" = 401 ]
check "a wrong cookie: 401" [ "$(status -H "Cookie: sandcell_port=0123456789abcdef0123456789abcdef" "http://$H/")" = 401 ]
ID2=$(api -X POST "$URL/cells" -d '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
OTHER=$(curl -s -D - -o /dev/null --resolve "8000-$ID2.sandcell.localhost:$SP:127.0.0.1" "http://8000-$ID2.sandcell.localhost:$SP/?token=$TOKEN" |
	sed -n 's/^Set-Cookie: sandcell_port=\([0-9a-f]*\);.*/\1/p')
check "another cell's port token does not open this one" \
	bash -c '[ -n "$0" ] && [ "$0" != "$1" ] && [ "$2" = 401 ]' "$OTHER" "$COOKIE" "$(status -H "Cookie: sandcell_port=$OTHER" "http://$H/")"
# what the cell's server is sent: its own cookies, not ours
api -X POST "$URL/cells/$ID/exec" -d '{"cmd": "(setsid python3 -c \"import http.server as h\nclass H(h.BaseHTTPRequestHandler):\n    def do_GET(s):\n        b=(s.headers.get(\\\"Cookie\\\") or \\\"none\\\").encode(); s.send_response(200); s.send_header(\\\"Content-Length\\\", str(len(b))); s.end_headers(); s.wfile.write(b)\nh.HTTPServer((\\\"127.0.0.1\\\", 8002), H).serve_forever()\" >/dev/null 2>&1 </dev/null &)"}' >/dev/null
H2="8002-$ID.sandcell.localhost:$SP"
cookies_seen() { curl -s --resolve "8002-$ID.sandcell.localhost:$SP:127.0.0.1" -H "Cookie: a=1; sandcell_port=$COOKIE; b=2" "http://$H2/"; }
seen_ok() { [ "$(cookies_seen)" = "a=1; b=2" ]; }
check "the cell's server gets its own cookies, not the port token" wait_until seen_ok
check "a WebSocket by host name with the cookie" \
	[ "$(ws_client "ws://127.0.0.1:$SP/ws" "Host: $H" "Cookie: sandcell_port=$COOKIE")" = ok ]

browse host "http://$H/?token=$TOKEN"
check "Chromium by host name (*.localhost): the page rendered and the round trip shown" round_trip_shown host
check "... its later requests got in by the cookie (the favicon reached the cell: 404, not 401)" \
	bash -c '! grep -q "status of 401" "$0"' "$SHOTS/host.json"

kill -TERM "$SERVER"
check "the server exits" wait_until gone_pid "$SERVER"
check "... and no cell is left" wait_until no_cells
finish
