#!/usr/bin/env python3
"""A small WebSocket (RFC 6455) server and client from the standard library.

  ws_fixture.py server PORT      (or python3 -c "$(cat ws_fixture.py)" server PORT)
      On 127.0.0.1:PORT: GET / is a page whose script opens a WebSocket to
      "ws" beside it (with the page's own query, so a token in it goes too),
      sends a line and shows the echo in green (#007700) (<html
      data-report="done">, the title "round trip: echo: ..."); a WebSocket on any path echoes each text or
      binary message back with "echo: " before it, and answers a close.
  ws_fixture.py client URL [HEADER: VALUE ...]
      Opens URL (ws://HOST:PORT/PATH?QUERY; a "Host: ..." among the headers
      replaces its host), checks the 101 and its
      Sec-WebSocket-Accept, sends a short message and one of 300 KiB,
      checks both echoes, closes; prints "ok" (else the problem, exit 1).
  ws_fixture.py green FILE.png
      How many pixels of a screenshot are the page's green (the echo shown).
"""
import base64
import hashlib
import http.server
import os
import socket
import struct
import sys
import urllib.parse

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>waiting</title>
<style>body{font:24px sans-serif;margin:40px;background:#fff;color:#123}
#s{font-weight:bold;color:#888}#s.done{color:#070}</style></head>
<body><h1>Served from a sandcell cell</h1><p id="s">connecting...</p>
<script>
var u = new URL('ws' + location.search, location.href);
u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
var w = new WebSocket(u.href);
w.onopen = function () { w.send('ping from the browser'); };
w.onmessage = function (e) {
  var t = 'round trip: ' + e.data;
  var s = document.getElementById('s');
  s.textContent = t;
  s.className = 'done';
  document.title = t;
  document.documentElement.setAttribute('data-report', 'done');
  w.close();
};
w.onerror = function () {
  document.title = 'websocket error';
  document.documentElement.setAttribute('data-report', 'error');
};
</script></body></html>
"""


def accept_of(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def read_exact(f, n):
    b = f.read(n)
    if b is None or len(b) != n:
        raise EOFError("the peer closed")
    return b


def read_frame(f):
    """(opcode, payload) of one frame, unmasked."""
    h = read_exact(f, 2)
    op, n, masked = h[0] & 15, h[1] & 127, h[1] & 128
    if n == 126:
        n = struct.unpack(">H", read_exact(f, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", read_exact(f, 8))[0]
    if n > 16 << 20:
        raise ValueError("a frame over 16 MiB")
    mask = read_exact(f, 4) if masked else None
    data = read_exact(f, n)
    if mask:
        data = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
    return op, data


def frame(op, data, mask):
    n = len(data)
    head = bytes([0x80 | op])
    mbit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mbit | n])
    elif n < 65536:
        head += bytes([mbit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([mbit | 127]) + struct.pack(">Q", n)
    if mask:
        k = os.urandom(4)
        data = bytes(b ^ k[i & 3] for i, b in enumerate(data))
        head += k
    return head + data


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept_of(self.headers["Sec-WebSocket-Key"]))
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            try:
                self.echo()
            except (EOFError, OSError, ValueError):
                pass
            return
        body = PAGE if urllib.parse.urlsplit(self.path).path.endswith("/") else b"not here\n"
        self.send_response(200 if body is PAGE else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def echo(self):
        while True:
            op, data = read_frame(self.rfile)
            if op == 8:
                self.wfile.write(frame(8, data[:2], False))
                self.wfile.flush()
                return
            if op in (1, 2):
                self.wfile.write(frame(op, b"echo: " + data, False))
                self.wfile.flush()


def server(port):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    s.daemon_threads = True
    s.serve_forever()


def client(url, headers):
    u = urllib.parse.urlsplit(url)
    path = (u.path or "/") + ("?" + u.query if u.query else "")
    key = base64.b64encode(os.urandom(16)).decode()
    c = socket.create_connection((u.hostname, u.port or 80), timeout=60)
    host = [h for h in headers if h.lower().startswith("host:")] or ["Host: " + u.netloc]
    req = ("GET %s HTTP/1.1\r\n%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % (path, host[0], key))
    headers = [h for h in headers if h not in host]
    for h in headers:
        req += h + "\r\n"
    c.sendall((req + "\r\n").encode())
    f = c.makefile("rb")
    status = f.readline().decode("latin-1").strip()
    head = {}
    while True:
        line = f.readline().decode("latin-1").strip()
        if not line:
            break
        k, _, v = line.partition(":")
        head[k.strip().lower()] = v.strip()
    if " 101 " not in status + " ":
        print("no switch: %s %s" % (status, f.read(300)))
        return 1
    if head.get("sec-websocket-accept") != accept_of(key):
        print("a wrong Sec-WebSocket-Accept: %r" % head.get("sec-websocket-accept"))
        return 1
    big = os.urandom(300 * 1024)
    for op, msg in ((1, b"hello through the proxy"), (2, big)):
        c.sendall(frame(op, msg, True))
        got_op, got = read_frame(f)
        if got_op != op or got != b"echo: " + msg:
            print("a wrong echo: op %d, %d bytes" % (got_op, len(got)))
            return 1
    c.sendall(frame(8, struct.pack(">H", 1000), True))
    op, _ = read_frame(f)
    if op != 8:
        print("no close frame back")
        return 1
    print("ok")
    return 0



def green_pixels(png_path):
    """How many pixels of an 8-bit RGB(A) PNG are the page's green."""
    import zlib
    d = open(png_path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(d):
        n, kind = struct.unpack(">I4s", d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "not 8-bit RGB(A)"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, count = zlib.decompress(idat), w * bpp, None, 0
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i] if prev else 0
            c = prev[i - bpp] if prev and i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        count += sum(1 for x in range(0, stride, bpp)
                     if line[x] < 40 and 0x60 <= line[x + 1] <= 0x88 and line[x + 2] < 40)
        prev = line
    return count


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "server":
        server(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "client":
        sys.exit(client(sys.argv[2], sys.argv[3:]))
    elif len(sys.argv) == 3 and sys.argv[1] == "green":
        print(green_pixels(sys.argv[2]))
    else:
        sys.exit(__doc__)

