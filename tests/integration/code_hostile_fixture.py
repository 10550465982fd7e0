"""t_code_session: the API's /cells/{id}/code against hostile cells.

  code_hostile_fixture.py API_SOCKET

Cell A runs LISTENER: it listens on the session's old socket path and holds
the first connection (a session start waiting for its hello) until
released, then answers as a worker would, writing HACKED into the run's
stdout. Cell C forges the session marker and plants a fast client that
prints HACKED. B is an ordinary cell. B's first /code must not wait for
A's (a lock per cell), and neither A's nor C's session may take the planted
answers. Prints one ok/FAIL line per check; exits 1 when one failed."""
import http.client
import json
import shlex
import socket
import sys
import threading
import time

API = sys.argv[1]
LISTENER = r'''import os, socket, struct, time
D = "/tmp/.sandcell/session"
os.makedirs(D, exist_ok=True)
p = os.path.join(D, "s.sock")
try:
    os.unlink(p)
except FileNotFoundError:
    pass
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(p)
ls.listen(8)
open("/tmp/listening", "w").close()
first = True
while True:
    c, _ = ls.accept()
    with open("/tmp/connected", "a") as f:
        f.write("x")
    if first:  # a session start waits for this hello: hold it until released
        first = False
        for _ in range(1800):
            if os.path.exists("/tmp/release"):
                break
            time.sleep(0.1)
    try:  # then answer as a worker would, with output of its own
        hello = b"pid=%d\n" % os.getpid()
        c.sendall(struct.pack("!I", len(hello)) + hello)
        c.settimeout(10)
        _, fds, _, _ = socket.recv_fds(c, 8, 2)
        for fd in fds:
            os.write(fd, b"HACKED\n")
        res = b"exit=0\ninterrupted=0\ncount=1\n"
        c.sendall(struct.pack("!I", len(res)) + res)
    except Exception:
        pass
    c.close()
'''


class Conn(http.client.HTTPConnection):
    def __init__(self, timeout):
        super().__init__("localhost", timeout=timeout)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(API)


def call(method, path, body=None, timeout=120):
    c = Conn(timeout)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def sh(cell, cmd):
    st, d = call("POST", "/cells/%s/exec" % cell, {"cmd": cmd, "timeout": 60})
    assert st == 200, (st, d)
    return d


results, ok = {}, True


def check(desc, cond, detail=""):
    global ok
    print(("ok   - " if cond else "FAIL - ") + desc + ("" if cond else ": %s" % (detail,)))
    ok = ok and bool(cond)


cells = {k: call("POST", "/cells", {})[1]["id"] for k in "ABC"}
A, B, C = cells["A"], cells["B"], cells["C"]
sh(A, "(setsid python3 -c %s </dev/null >/tmp/listener.log 2>&1 &); "
      "for i in $(seq 100); do [ -e /tmp/listening ] && break; sleep 0.1; done; ls /tmp/listening"
   % shlex.quote(LISTENER))
sh(C, "mkdir -p /tmp/.sandcell/session && printf 'python\\nproto=2\\nfast=1\\n' >/tmp/.sandcell/session/lang && "
      "printf '#!/bin/sh\\necho HACKED\\n' >/tmp/.sandcell/session/client && "
      "chmod 755 /tmp/.sandcell/session/client")


def code(name, cell, timeout):
    try:
        results[name] = call("POST", "/cells/%s/code" % cell, {"code": "print(6 * 7)"}, timeout)
    except Exception as e:  # noqa: BLE001 - reported by the check
        results[name] = ("exception", repr(e))


def stdout_is(name, want):
    st, d = results.get(name, (None, None))
    return st == 200 and "HACKED" not in json.dumps(d) and d["run_result"]["stdout"] == want


ta = threading.Thread(target=code, args=("A", A, 300))
ta.start()
# A's first /code has begun once it connected to the listener, or finished
for _ in range(300):
    if not ta.is_alive() or sh(A, "cat /tmp/connected 2>/dev/null")["stdout"]:
        break
    time.sleep(0.2)
code("B", B, 45)
check("another cell's first /code answers while the hostile cell's listener holds on",
      stdout_is("B", "42\n"), results["B"])
code("C", C, 120)
check("a forged session marker and a planted client: the session is installed anyway and runs the code",
      stdout_is("C", "42\n"), results["C"])
sh(A, "touch /tmp/release")
ta.join(300)
check("the hostile cell's own /code does not run the listener's answers", stdout_is("A", "42\n"),
      results.get("A"))
check("the session never connected to the socket the cell made",
      sh(A, "cat /tmp/connected 2>/dev/null")["stdout"] == "", "it did")
code("A2", A, 120)
check("a second /code in the hostile cell runs in its session", stdout_is("A2", "42\n"), results["A2"])
for cell in (A, B, C):
    call("DELETE", "/cells/" + cell)
sys.exit(0 if ok else 1)
