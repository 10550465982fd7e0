"""The HTTP client against a server that is not a good sandcell server: a
tiny HTTP server on loopback (a thread here) that answers 2xx with
something other than a JSON object, or trickles its answer a byte at a
time. The client must raise its own error, and within the call's timeout."""
import os
import socket
import threading
import time
import unittest
from unittest import mock

import _util  # noqa: F401 - the package on sys.path
from sandcell import SandboxError, SandboxSession
from sandcell import _client

BYTE_EVERY = 0.2  # seconds between the bytes of a trickled answer
TRICKLE_BYTES = 600  # 2 minutes of them: far longer than any timeout below


def _answer(status, body, ctype="application/json"):
    return ("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % (status, ctype, len(body))).encode() + body


class _Server:
    """One thread per connection: reads the request head, then answers by path."""

    def __init__(self):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.url = "http://127.0.0.1:%d" % self.ls.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.stop.set()
        self.ls.close()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _trickle(self, conn, data):
        for i in range(len(data)):
            if self.stop.wait(BYTE_EVERY):
                return
            conn.sendall(data[i:i + 1])

    def _serve(self, conn):
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            head, _, body = head.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = min(int(value), 1 << 20)
            while len(body) < length:  # read it all: unread bytes would reset the connection
                chunk = conn.recv(4096)
                if not chunk:
                    return
                body += chunk
            path = head.split(b" ", 2)[1].decode()
            if path == "/cells":  # POST /cells of a session: 201, not JSON
                conn.sendall(_answer("201 Created", b"<html>a proxy's page</html>", "text/html"))
            elif path == "/text":
                conn.sendall(_answer("200 OK", b"hello", "text/plain"))
            elif path == "/list":
                conn.sendall(_answer("200 OK", b"[1, 2]"))
            elif path == "/empty":
                conn.sendall(_answer("200 OK", b""))
            elif path == "/trickle-body":
                conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Content-Length: %d\r\n\r\n" % TRICKLE_BYTES).encode())
                self._trickle(conn, b" " * TRICKLE_BYTES)
            elif path == "/trickle-head":
                self._trickle(conn, b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * TRICKLE_BYTES)
            elif path == "/trickle-stream":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n")
                self._trickle(conn, b'{"type":"stdout","data":"' + b"x" * TRICKLE_BYTES)
            elif path == "/stream-list":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n[1]\n")
        except OSError:
            pass
        finally:
            conn.close()


class TestClientAgainstABadServer(unittest.TestCase):
    def setUp(self):
        self.srv = _Server()
        self.client = _client.Client(self.srv.url)

    def tearDown(self):
        self.srv.close()

    def test_a_2xx_answer_that_is_not_a_json_object_is_a_sandbox_error(self):
        for path in ("/text", "/list", "/empty"):
            with self.subTest(path=path):
                with self.assertRaises(SandboxError) as cm:
                    self.client.json("GET", path, timeout=30)
                self.assertIn("not a JSON object", str(cm.exception))

    def test_a_session_on_a_server_answering_html_raises_sandbox_error_not_type_error(self):
        with mock.patch.dict(os.environ, {"SANDCELL_URL": self.srv.url}):
            s = SandboxSession(lang="python")
            with self.assertRaises(SandboxError) as cm:
                s.open()
        self.assertIn("not a JSON object", str(cm.exception))

    def test_a_stream_event_that_is_not_an_object_is_a_sandbox_error(self):
        with self.assertRaises(SandboxError):
            list(self.client.stream("/stream-list", {}, 30))

    def _assert_bounded(self, fn, timeout):
        t0 = time.monotonic()
        with self.assertRaises(SandboxError) as cm:
            fn()
        took = time.monotonic() - t0
        # the server would go on for TRICKLE_BYTES * BYTE_EVERY = 120 s
        self.assertLess(took, timeout + 20, "the call took %.1f s for a timeout of %g s" % (took, timeout))
        self.assertIn("%g s" % timeout, str(cm.exception))

    def test_a_trickled_body_ends_at_the_calls_deadline(self):
        self._assert_bounded(lambda: self.client.call("GET", "/trickle-body", timeout=2), 2)

    def test_trickled_headers_end_at_the_calls_deadline(self):
        self._assert_bounded(lambda: self.client.json("GET", "/trickle-head", timeout=2), 2)

    def test_a_trickled_stream_ends_at_the_calls_deadline(self):
        self._assert_bounded(lambda: list(self.client.stream("/trickle-stream", {}, 2)), 2)


if __name__ == "__main__":
    unittest.main()
