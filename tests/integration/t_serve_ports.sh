#!/usr/bin/env bash
# serve's /cells/{id}/ports/{port}/...: HTTP from a real client (Python's
# urllib) through a real `sandcell serve` on loopback to servers on the
# cell's own loopback (python3 -m http.server, and a small one that
# echoes POSTs), behind the token; the cell has no network.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >/dev/null 2>"$T_WORK/serve.err" &
SERVER=$!
trap 'kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; t_cleanup' EXIT
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

# req METHOD PATH [BODY] [notoken]: prints STATUS, then Content-Type, then the body
cat >"$T_DIR/req.py" <<'PY'
import sys, urllib.request, urllib.error
url, tok, method, path = sys.argv[1:5]
data = sys.argv[5].encode() if len(sys.argv) > 5 and sys.argv[5] else None
h = {} if len(sys.argv) > 6 else {"Authorization": "Bearer " + tok}
h["Content-Type"] = "application/x-test"
r = urllib.request.Request(url + path, data=data, method=method, headers=h)
try:
    f = urllib.request.urlopen(r, timeout=120)
except urllib.error.HTTPError as e:
    f = e
body = f.read()
print(f.status)
print(f.headers.get("Content-Type"))
sys.stdout.write(body.decode("latin-1"))
PY
req() { python3 "$T_DIR/req.py" "$URL" "$TOKEN" "$@"; }
status_of() { printf '%s\n' "$1" | sed -n 1p; }
type_of() { printf '%s\n' "$1" | sed -n 2p; }
body_of() { printf '%s\n' "$1" | sed -n '3,$p'; }

OUT=$(req POST /cells '{}')
ID=$(body_of "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
check "a cell" test -n "$ID"

OUT=$(req GET "/cells/$ID/ports/8000/")
check "nothing listening yet: 502 that says so" \
	bash -c '[ "$(printf "%s\n" "$0" | sed -n 1p)" = 502 ] && printf "%s" "$0" | grep -q "nothing listens on port 8000"' "$OUT"

# In the cell: a page for http.server, a 1 MiB file, and an echo server.
ECHO='
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        out = json.dumps({"path": self.path, "body": body.decode(), "type": self.headers.get("Content-Type"),
                          "auth": self.headers.get("Authorization")}).encode()
        self.send_response(201); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
http.server.ThreadingHTTPServer(("127.0.0.1", 8001), H).serve_forever()
'
printf '%s' "$ECHO" >"$T_WORK/echo.py"
chmod 644 "$T_WORK/echo.py"
ECHO_B64=$(base64 -w0 "$T_WORK/echo.py")
OUT=$(req POST "/cells/$ID/exec" "{\"cmd\": \"mkdir -p /srv && cd /srv && echo '<h1>hello from the cell</h1>' > index.html && head -c 1048576 /dev/urandom > blob && sha256sum blob | cut -d' ' -f1 > blob.sum && echo $ECHO_B64 | base64 -d > /tmp/echo.py && (setsid python3 -m http.server --bind 127.0.0.1 8000 >/dev/null 2>&1 </dev/null &) && (setsid python3 /tmp/echo.py >/dev/null 2>&1 </dev/null &) && cat blob.sum\"}")
SUM=$(body_of "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].strip())')
check "the cell's servers start" test -n "$SUM"

page_up() { OUT=$(req GET "/cells/$ID/ports/8000/index.html"); [ "$(status_of "$OUT")" = 200 ]; }
check "GET through the proxy reaches python3 -m http.server in the cell" wait_until page_up
check "... with its body" bash -c 'printf "%s" "$0" | grep -q "<h1>hello from the cell</h1>"' "$OUT"
check "... and its Content-Type" [ "$(type_of "$OUT")" = text/html ]
OUT=$(req GET "/cells/$ID/ports/8000/missing.html")
check "the cell server's 404 comes back as 404" [ "$(status_of "$OUT")" = 404 ]
python3 - "$URL" "$TOKEN" "$ID" "$SUM" >"$T_WORK/blob.out" <<'PY'
import hashlib, sys, urllib.request
url, tok, cid, want = sys.argv[1:]
r = urllib.request.Request(f"{url}/cells/{cid}/ports/8000/blob", headers={"Authorization": "Bearer " + tok})
got = hashlib.sha256(urllib.request.urlopen(r, timeout=120).read()).hexdigest()
print("same" if got == want else "differs")
PY
check "a 1 MiB binary answer comes through byte for byte" grep -qx same "$T_WORK/blob.out"

echo_up() { OUT=$(req POST "/cells/$ID/ports/8001/api/items" 'payload-123'); [ "$(status_of "$OUT")" = 201 ]; }
check "POST through the proxy: the cell server's 201" wait_until echo_up
J=$(body_of "$OUT")
check "... it got the path, the body and the Content-Type" \
	[ "$(printf '%s' "$J" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["path"], d["body"], d["type"])')" = "/api/items payload-123 application/x-test" ]
check "... and not the server's token" \
	[ "$(printf '%s' "$J" | python3 -c 'import json,sys; print(json.load(sys.stdin)["auth"])')" = None ]

OUT=$(req POST "/cells/$ID/ports/8001/q?a=1&b=x%20y&token=$TOKEN" 'with-query')
check "the query string is sent on (not ?token=)" \
	[ "$(body_of "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')" = "/q?a=1&b=x%20y" ]
OUT=$(req GET "/cells/$ID/ports/8000/index.html" "" notoken)
check "without the token: 401" [ "$(status_of "$OUT")" = 401 ]
OUT=$(req GET "/cells/vm-0000000000000000/ports/8000/")
check "an unknown cell: 404" [ "$(status_of "$OUT")" = 404 ]
OUT=$(req GET "/cells/$ID/ports/70000/")
check "a port beyond 65535 is no route: 404" [ "$(status_of "$OUT")" = 404 ]

# A hostile server in the cell: a NUL in its status line, then one whose
# Content-Type carries a bare newline (a header of its own to inject).
HOSTILE=$(base64 -w0 <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8002))
s.listen(4)
answers = [b"HTTP/1.0 200 OK\x00junk\r\nX: y\r\n\r\nnul-body",
           b"HTTP/1.0 200 OK\r\nContent-Type: text/html\nSet-Cookie: stolen=1\r\n\r\ninjected-body",
           b"\x00\x00\x00\r\n\r\n"]
for a in answers:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(a)
    c.close()
PY
)
OUT=$(req POST "/cells/$ID/exec" "{\"cmd\": \"echo $HOSTILE | base64 -d > /tmp/hostile.py && (setsid python3 /tmp/hostile.py >/dev/null 2>&1 </dev/null &) && sleep 0.5\"}")
hostile_up() { OUT=$(req GET "/cells/$ID/ports/8002/"); [ "$(status_of "$OUT")" != 502 ] || ! body_of "$OUT" | grep -q "nothing listens"; }
check "a status line with a NUL: answered, the server alive" wait_until hostile_up
check "... as the cell's 200 with its body" \
	[ "$(status_of "$OUT")/$(body_of "$OUT")" = 200/nul-body ]
OUT=$(req GET "/cells/$ID/ports/8002/")
check "a Content-Type with a bare newline is not sent on (no injected header)" \
	[ "$(status_of "$OUT")/$(type_of "$OUT")/$(body_of "$OUT")" = 200/application/octet-stream/injected-body ]
OUT=$(req GET "/cells/$ID/ports/8002/")
check "an answer that is not HTTP: 502" [ "$(status_of "$OUT")" = 502 ]
OUT=$(req GET "/cells/$ID/ports/8000/index.html")
check "the server still proxies after all three" [ "$(status_of "$OUT")" = 200 ]

kill -TERM "$SERVER"
check "the server exits" wait_until gone_pid "$SERVER"
check "... and no cell is left" wait_until no_cells
finish
