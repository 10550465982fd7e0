"""Loopback fixture for t_egress.sh: an HTTPS server (the test's
self-signed certificate) and a plain HTTP server on 127.0.0.1, serving one
directory. Every TCP connection either accepts is appended to CONN_LOG
before anything is read, so the test can tell that the proxy never
connected for a refused request. Writes "HTTPS_PORT HTTP_PORT" to PORT_FILE."""
import http.server
import socketserver
import ssl
import sys
import threading

root, cert, key, conn_log, port_file = sys.argv[1:6]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=root, **kw)

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    tls = None

    def get_request(self):
        sock, addr = self.socket.accept()
        with open(conn_log, "a") as f:
            f.write("%s %s\n" % ("https" if self.tls else "http", addr[1]))
        if self.tls:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        pass


https = Server(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
https.tls = ctx
plain = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write("%d %d\n" % (https.server_address[1], plain.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
threading.Thread(target=plain.serve_forever, daemon=True).start()
https.serve_forever()
