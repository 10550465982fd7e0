#!/usr/bin/python3
"""A client of `sandcell serve` for tests/integration/t_serve.sh (standard
library only). Each subcommand prints "ok - ..." / "FAIL - ..." lines and
exits 1 when something failed.

  serve_client.py URL TOKEN golden GOLDEN.json [--no-cpp]
  serve_client.py URL TOKEN auth
  serve_client.py URL TOKEN cells
  serve_client.py URL TOKEN concurrency CLIENTS REQUESTS
  serve_client.py URL TOKEN hostile
  serve_client.py unix:PATH - busy          (a server with --max-concurrency 1)
  serve_client.py URL TOKEN slow-attack SECONDS HEADS BODIES   (t_serve_slow.sh)
  serve_client.py URL TOKEN drain | bigput MIB
URL is http://127.0.0.1:PORT.
"""
import base64
import http.client
import io
import json
import os
import re
import signal
import socket
import sys
import tarfile
import threading
import time
import urllib.parse

FAILS = 0


def ok(cond, what, detail=""):
    global FAILS
    if cond:
        print("ok   - " + what)
    else:
        FAILS += 1
        print("FAIL - " + what + (": " + str(detail)[:800] if detail else ""))
    sys.stdout.flush()
    return cond


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Client:
    def __init__(self, url, token):
        self.url = url
        self.token = None if token == "-" else token
        if url.startswith("unix:"):
            self.unix = url[5:]
        else:
            self.unix = None
            u = urllib.parse.urlparse(url)
            self.host, self.port = u.hostname, u.port

    def conn(self, timeout=120):
        if self.unix:
            return UnixConnection(self.unix, timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, token=True, headers=None, raw=False):
        """(status, headers, parsed JSON or bytes)"""
        h = dict(headers or {})
        if token and self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        elif isinstance(body, str):
            body = body.encode()
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if raw:
                return r.status, hdrs, data
            try:
                return r.status, hdrs, json.loads(data) if data else None
            except ValueError:
                return r.status, hdrs, data
        finally:
            c.close()


# ---- golden contract ----

def matches(expect, got, path="$"):
    """expect is a subset of got; "<str>", "<number>", "<nonzero>", "<any>",
    "~TEXT" (a string containing TEXT) match kinds of values."""
    if isinstance(expect, str) and expect.startswith("<"):
        if expect == "<any>":
            return None
        if expect == "<str>":
            return None if isinstance(got, str) else "%s: not a string" % path
        if expect == "<number>":
            return None if isinstance(got, (int, float)) and not isinstance(got, bool) else \
                "%s: not a number" % path
        if expect == "<nonzero>":
            return None if isinstance(got, int) and got != 0 else "%s: %r is not non-zero" % (path, got)
    if isinstance(expect, str) and expect.startswith("~"):
        return None if isinstance(got, str) and expect[1:] in got else \
            "%s: %r lacks %r" % (path, got, expect[1:])
    if isinstance(expect, dict):
        if not isinstance(got, dict):
            return "%s: not an object" % path
        for k, v in expect.items():
            if k not in got:
                return "%s.%s: missing" % (path, k)
            m = matches(v, got[k], path + "." + k)
            if m:
                return m
        return None
    return None if expect == got else "%s: %r != %r" % (path, got, expect)


RESULT_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
EXEC_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


def golden(c, file, no_cpp):
    cases = json.load(open(file))
    for case in cases:
        name = case["name"]
        if no_cpp and case.get("needs") == "g++":
            print("skip - golden %s (no g++ here)" % name)
            continue
        body = case["request"]
        if isinstance(body, dict) and "raw" in body:
            body = body["raw"]
        st, _, got = c.request("POST", "/run_code", body)
        want = case["response"]
        if not ok(st == case.get("http", 200), "golden %s: HTTP %d" % (name, case.get("http", 200)),
                  "got %d %r" % (st, got)):
            continue
        m = matches(want, got)
        ok(m is None, "golden %s: the response matches" % name, "%s; got %s" % (m, json.dumps(got)))
        if "files_keys" in case:
            ok(isinstance(got.get("files"), dict) and sorted(got["files"]) == case["files_keys"],
               "golden %s: files holds %s only" % (name, case["files_keys"]), got.get("files"))
        if st == 200:
            ok(RESULT_KEYS <= set(got), "golden %s: every SandboxFusion key is there" % name, got)
            for step in ("compile_result", "run_result"):
                r = got.get(step)
                if r is not None:
                    ok(EXEC_KEYS <= set(r) and isinstance(r["stdout"], str) and isinstance(r["stderr"], str),
                       "golden %s: %s has its keys, stdout/stderr are strings" % (name, step), r)


# ---- auth ----

ROUTES = [("GET", "/v1/ping"), ("POST", "/run_code"), ("POST", "/cells"), ("GET", "/cells"),
          ("POST", "/cells/0123456789abcdef/exec"), ("PUT", "/cells/0123456789abcdef/files?path=x"),
          ("GET", "/cells/0123456789abcdef/files?path=x"), ("DELETE", "/cells/0123456789abcdef"),
          ("GET", "/no/such/route")]


def auth(c):
    for m, p in ROUTES:
        body = b'{"code":"print(1)"}' if m in ("POST", "PUT") else None
        st, h, got = c.request(m, p, body, token=False)
        if p == "/v1/ping":  # a probe's (kubelet's httpGet): liveness only, no token to give
            ok(st == 200 and got == "pong", "no token: GET /v1/ping is \"pong\" (a health probe)", (st, got))
        else:
            ok(st == 401, "no token: %s %s is 401" % (m, p), st)
        st, h, _ = c.request(m, p, body, token=False, headers={"Authorization": "Bearer wrong-token-x"})
        ok(st == 401, "a wrong token: %s %s is 401" % (m, p), st)
    st, _, got = c.request("GET", "/v1/ping?token=" + urllib.parse.quote(c.token), token=False)
    ok(st == 200 and got == "pong", "?token= is accepted", (st, got))
    st, _, got = c.request("GET", "/v1/ping")
    ok(st == 200 and got == "pong", "GET /v1/ping is \"pong\" with the token", (st, got))


# ---- cells ----

def cells(c):
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201 and isinstance(got, dict) and "id" in got, "POST /cells makes a cell", (st, got)):
        return
    cid = got["id"]
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "echo one > f; cat f; echo $FOO; pwd", "env": {"FOO": "bar"}})
    ok(st == 200 and got["exit_code"] == 0 and got["stdout"] == "one\nbar\n/testbed\n",
       "exec cmd with env in the cell", got)
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["cat", "f"]})
    ok(st == 200 and got["stdout"] == "one\n", "files persist between execs of one cell", got)
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["cat"], "stdin": "in\x01put", "cwd": "/tmp"})
    ok(st == 200 and got["stdout"] == "in\x01put", "exec argv with stdin", got)
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["sh", "-c", "exit 3"]})
    ok(st == 200 and got["exit_code"] == 3, "exec reports the exit status", got)
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["sleep", "30"], "timeout": 1})
    ok(st == 200 and got["timed_out"] is True and got["exit_code"] == 124, "exec timeout is 124", got)
    data = bytes(range(256)) * 40
    st, _, got = c.request("PUT", "/cells/%s/files?path=/testbed/d/bin.dat" % cid, data)
    ok(st == 200 and got["size"] == len(data), "PUT a binary file (parents made)", (st, got))
    st, _, got = c.request("GET", "/cells/%s/files?path=d/bin.dat" % cid, raw=True)
    ok(st == 200 and got == data, "GET it back, byte for byte", (st, len(got)))
    st, _, got = c.request("GET", "/cells/%s/files?path=/no/such" % cid)
    ok(st == 404, "GET a missing file is 404", (st, got))
    st, _, got = c.request("GET", "/cells/%s/files?path=../../etc/shadow" % cid)
    ok(st == 400, "a file path with .. is 400", (st, got))
    st, _, got = c.request("GET", "/cells")
    ok(st == 200 and [x["id"] for x in got["cells"]] == [cid], "GET /cells lists it", got)
    # an exec that a DELETE interrupts answers 410 (the documented gone), not 500
    st, _, got = c.request("POST", "/cells", {})
    if ok(st == 201, "POST /cells for a DELETE during an exec", (st, got)):
        victim = got["id"]
        res = {}
        t = threading.Thread(target=lambda: res.update(r=c.request(
            "POST", "/cells/%s/exec" % victim, {"argv": ["sleep", "30"], "timeout": 120})))
        t0 = time.time()
        t.start()
        for _ in range(600):
            if "sleep 30" in procs(c, victim):
                break
            time.sleep(0.05)
        st, _, got = c.request("DELETE", "/cells/%s" % victim)
        ok(st == 200, "DELETE the cell while its exec runs", (st, got))
        t.join(60)
        st, _, got = res.get("r", (None, None, None))
        ok(st == 410 and "deleted" in json.dumps(got), "the interrupted exec answers 410 (after %.1f s)" %
           (time.time() - t0), (st, got))
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200 and got.get("deleted") is True, "DELETE /cells/{id}", (st, got))
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["true"]})
    ok(st == 404, "a deleted cell is 404", (st, got))
    st, _, got = c.request("GET", "/cells")
    ok(st == 200 and got["cells"] == [], "GET /cells is empty again", got)
    st, _, got = c.request("POST", "/cells", {"image": "no-such-image"})
    ok(st == 422, "POST /cells with another image is 422", (st, got))
    # idleness
    st, _, got = c.request("POST", "/cells", {"idle_timeout": 1})
    if ok(st == 201, "POST /cells with idle_timeout 1", (st, got)):
        cid = got["id"]
        gone = False
        for _ in range(120):
            st, _, got = c.request("GET", "/cells")
            if cid not in [x["id"] for x in got["cells"]]:
                gone = True
                break
            time.sleep(0.5)
        ok(gone, "an idle cell is removed", got)


# ---- streamed exec (Accept: application/x-ndjson) ----

def stream_open(c, cid, body, route="exec"):
    h = {"Authorization": "Bearer " + c.token} if c.token else {}
    h["Accept"] = "application/x-ndjson"
    h["Content-Type"] = "application/json"
    conn = c.conn(timeout=120)
    conn.request("POST", "/cells/%s/%s" % (cid, route), body=json.dumps(body).encode(), headers=h)
    return conn, conn.getresponse()


def stream_events(r):
    while True:
        line = r.readline()
        if not line:
            return
        yield json.loads(line)


def procs(c, cid):
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"})
    return got.get("stdout", "") if isinstance(got, dict) else ""


def stream(c):
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201, "POST /cells for streaming", (st, got)):
        return
    cid = got["id"]
    conn, r = stream_open(c, cid, {"cmd": "echo first; echo oops >&2; "
                                          "while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second; exit 4",
                                   "timeout": 120})
    ok(r.status == 200 and r.getheader("Content-Type") == "application/x-ndjson",
       "a streamed exec answers 200 application/x-ndjson", (r.status, r.getheaders()))
    ev = stream_events(r)
    seen = []
    for e in ev:
        seen.append(e)
        if e.get("type") == "stdout" and "first" in e.get("data", ""):
            break
        if e.get("type") == "result":
            break
    ok(seen and seen[-1] == {"type": "stdout", "data": "first\n"},
       "the first line arrives while the command still runs (before the result)", seen)
    # the command waits for this file: it cannot have finished yet
    st, _, got = c.request("PUT", "/cells/%s/files?path=/tmp/go" % cid, b"")
    ok(st == 200, "PUT the file the command waits for", (st, got))
    seen += list(ev)
    conn.close()
    kinds = [e.get("type") for e in seen]
    out = "".join(e["data"] for e in seen if e.get("type") == "stdout")
    err = "".join(e["data"] for e in seen if e.get("type") == "stderr")
    ok(out == "first\nsecond\n" and err == "oops\n", "stdout and stderr events carry the output, in order",
       seen)
    ok(kinds[-1] == "result" and kinds.count("result") == 1, "one result event, the last", kinds)
    ok(seen[-1].get("exit_code") == 4, "the result has the exit status", seen[-1])

    conn, r = stream_open(c, cid, {"argv": ["sh", "-c", "echo a; sleep 60"], "timeout": 5})
    seen = list(stream_events(r))
    conn.close()
    ok(seen and seen[0] == {"type": "stdout", "data": "a\n"} and seen[-1].get("type") == "result"
       and seen[-1].get("timed_out") is True, "a streamed command's timeout ends in a timed-out result", seen)

    # a command silent for longer than the idle timeout (t_serve.sh: 3 s)
    conn, r = stream_open(c, cid, {"cmd": "sleep 7; echo woke", "timeout": 60})
    seen = list(stream_events(r))
    conn.close()
    kinds = [e.get("type") for e in seen]
    ok(kinds and kinds[-1] == "result" and seen[-1].get("exit_code") == 0 and
       {"type": "stdout", "data": "woke\n"} in seen,
       "a stream outlives a silence longer than the connection timeout", seen)
    ok("keepalive" in kinds and set(kinds) <= {"keepalive", "stdout", "result"},
       "the silence is filled with keepalive events", kinds)

    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"cmd": "echo plain"},
                           headers={"Accept": "application/json"})
    ok(st == 200 and got.get("stdout") == "plain\n", "without the ndjson Accept exec answers one JSON", got)

    # a client that goes away ends the command
    conn, r = stream_open(c, cid, {"cmd": "echo started; exec sleep 612", "timeout": 300})
    first = r.readline()
    ok(json.loads(first) == {"type": "stdout", "data": "started\n"}, "the long command started", first)
    ok("sleep 612" in procs(c, cid), "its process runs in the cell")
    r.close()
    conn.close()
    idle = False
    for _ in range(240):
        st, _, got = c.request("GET", "/cells")
        mine = [x for x in got["cells"] if x["id"] == cid]
        if mine and mine[0]["busy"] == 0 and "sleep 612" not in procs(c, cid):
            idle = True
            break
        time.sleep(0.5)
    ok(idle, "a client that goes away ends the command (the cell is idle, no process left)", got)
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200, "DELETE the streaming cell", (st, got))


# ---- code sessions (POST /cells/{id}/code) ----

def leave_code_run(c, cid, src, what):
    """Start a streamed /code run that writes 'started\\n' (in one write: a
    client gone between the word and its newline would end the run on the
    broken pipe instead), and go away once that arrives."""
    conn, r = stream_open(c, cid, {"code": src, "timeout": 300}, "code")
    first = r.readline()
    ok(first and json.loads(first) == {"type": "stdout", "data": "started\n"}, what, first)
    r.close()
    conn.close()


def code_client_gone(c, cid, path):
    # A streamed run whose client goes away: the cell is free again, the
    # code stops (interrupted, not left running), and the session goes on
    # with its state (x = 41 was set before).
    leave_code_run(c, cid, "import sys, time\nsys.stdout.write('started\\n')\ntime.sleep(613)\n",
                   "the long /code run started")
    free = False
    for _ in range(600):
        st, _, got = c.request("GET", "/cells")
        mine = [x for x in got["cells"] if x["id"] == cid]
        if mine and mine[0]["busy"] == 0:
            free = True
            break
        time.sleep(0.1)
    ok(free, "a /code client that goes away frees its cell", got)
    st, _, got = c.request("POST", path, {"code": "print(x + 2)", "timeout": 20})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "43\n"
       and got.get("session_restarted") is False,
       "the next /code runs at once in the same session: the gone client's code was stopped", (st, got))
    # code that swallows the interrupt: the interpreter is killed and the
    # next run says the session was restarted
    leave_code_run(c, cid, "import signal, sys, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                   "sys.stdout.write('started\\n')\ntime.sleep(613)\n", "the stubborn run started")
    st, _, got = c.request("POST", path, {"code": "print('after')", "timeout": 20})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "after\n"
       and got.get("session_restarted") is True and "restarted" in got["run_result"]["stderr"],
       "code that ignores the interrupt is killed: the next run says the session restarted", (st, got))


def code(c, with_plots):
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201, "POST /cells for a code session", (st, got)):
        return
    cid = got["id"]
    path = "/cells/%s/code" % cid
    st, _, got = c.request("POST", path, {"code": "x = 41\nprint('set')", "timeout": 120})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "set\n"
       and got.get("session_restarted") is False and got.get("compile_result") is None,
       "the first /code call starts the session and runs", (st, got))
    st, _, got = c.request("POST", path, {"code": "print(x + 1)", "language": "python", "timeout": 120})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "42\n",
       "state is kept across calls", (st, got))
    st, _, got = c.request("POST", path, {"code": "raise ValueError('boom')", "timeout": 120})
    ok(st == 200 and got.get("status") == "Failed" and got["run_result"]["return_code"] != 0
       and "ValueError: boom" in got["run_result"]["stderr"], "an error is Failed with its traceback", (st, got))
    st, _, got = c.request("POST", path, {"code": "print(x)", "timeout": 120})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "41\n",
       "the session recovers after the error, state intact", (st, got))
    code_client_gone(c, cid, path)
    st, _, got = c.request("POST", path, {"code": "print(1)", "language": "cpp"})
    ok(st == 422, "a language without sessions is 422", (st, got))
    st, _, got = c.request("POST", path, {"language": "python"})
    ok(st == 422, "a body without code is 422", (st, got))
    if with_plots:
        src = "import matplotlib\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n"
        st, _, got = c.request("POST", path, {"code": src, "timeout": 120, "clear_plots": True})
        p = got.get("plots") if isinstance(got, dict) else None
        ok(st == 200 and got.get("status") == "Success" and isinstance(p, list) and len(p) == 1
           and p[0]["format"] == "png"
           and base64.b64decode(p[0]["content_base64"])[:8] == b"\x89PNG\r\n\x1a\n",
           "a plot comes back as a PNG", (st, got))
    else:
        print("skip - plots (no matplotlib in the cell's python3)")
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200, "DELETE the session's cell", (st, got))


# ---- the pool's cells load the Python support module as bytecode ----

BYTECODE_PROBE = """import json, os, sys
m = sys.modules.get("sitecustomize")
pyc = getattr(m, "__cached__", None) or ""
flags = -1
if os.path.isfile(pyc):
    with open(pyc, "rb") as f:
        flags = int.from_bytes(f.read(8)[4:8], "little")
print(json.dumps({"source": getattr(m, "__file__", None), "flags": flags}))
"""


def bytecode(c, runs):
    # Runs write no bytecode: a pyc beside sandcell's sitecustomize, and
    # an unchecked-hash one (flags 1, which Python never writes itself),
    # is the one the pool compiled once and gave each cell.
    seen = []
    for _ in range(runs):
        st, _, got = c.request("POST", "/run_code", {"code": BYTECODE_PROBE})
        try:
            seen.append(json.loads(got["run_result"]["stdout"]))
        except Exception:
            seen.append((st, got))
    ok(all(isinstance(s, dict) and s["source"] == "/tmp/.sandcell/py/sitecustomize.py"
           and s["flags"] == 1 for s in seen),
       "every pool cell has the support module's bytecode, compiled once per worker", seen)


# ---- code of any language in a cell (POST /cells/{id}/run), streamed too ----

def run_route(c, with_cpp):
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201, "POST /cells for /run", (st, got)):
        return
    cid = got["id"]
    path = "/cells/%s/run" % cid
    st, _, got = c.request("POST", path, {"code": "open('kept.txt', 'w').write('k')\nprint('py')",
                                          "workdir": "/sandbox", "timeout": 120})
    ok(st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "py\n",
       "/run runs python in the cell", (st, got))
    st, _, got = c.request("GET", "/cells/%s/files?path=/sandbox/kept.txt" % cid, raw=True)
    ok(st == 200 and got == b"k", "/run's workdir is the cell's: files stay", (st, got))
    st, _, got = c.request("POST", path, {"code": "echo $((6*7)); exit 3", "language": "bash"})
    ok(st == 200 and got.get("status") == "Failed" and got["run_result"]["return_code"] == 3
       and got["run_result"]["stdout"] == "42\n", "/run runs bash, exit code kept", (st, got))
    st, _, got = c.request("POST", path, {"code": "x = 1"})
    st, _, got = c.request("POST", path, {"code": "print(x)"})
    ok(st == 200 and "NameError" in got["run_result"]["stderr"], "/run keeps no interpreter state", got)
    if with_cpp:
        st, _, got = c.request("POST", path, {"code": "#include <cstdio>\nint main(){std::puts(\"c\");}",
                                              "language": "cpp", "timeout": 120, "compile_timeout": 120})
        ok(st == 200 and got.get("status") == "Success" and got["compile_result"] is not None
           and got["run_result"]["stdout"] == "c\n", "/run compiles and runs cpp", (st, got))
    st, _, got = c.request("POST", path, {"code": "import time\ntime.sleep(60)", "timeout": 1})
    ok(st == 200 and got["run_result"]["status"] == "TimeLimitExceeded", "/run's timeout", got)
    st, _, got = c.request("POST", path, {"code": "print(1)", "language": "klingon"})
    ok(st == 422, "/run: an unknown language is 422", (st, got))
    st, _, got = c.request("POST", path, {"code": "print(1)", "workdir": "/sandbox/../etc"})
    ok(st == 422, "/run: a workdir with '..' is 422", (st, got))
    src = ("import sys, time\nprint('first', flush=True)\nprint('e\u00e9', file=sys.stderr, flush=True)\n"
           "import os\nwhile not os.path.exists('/tmp/go'): time.sleep(0.1)\nprint('second')\nsys.exit(4)\n")
    for route in ("run", "code"):
        conn, r = stream_open(c, cid, {"code": src, "timeout": 120}, route)
        ok(r.status == 200 and r.getheader("Content-Type") == "application/x-ndjson",
           "a streamed /%s answers 200 application/x-ndjson" % route, (r.status, r.getheaders()))
        ev = stream_events(r)
        seen = []
        for e in ev:
            seen.append(e)
            if e.get("type") in ("result", "error") or "first" in e.get("data", ""):
                break
        ok(seen and seen[-1].get("type") == "stdout" and seen[-1]["data"].startswith("first"),
           "/%s: the first line arrives while the code still runs" % route, seen)
        st, _, got = c.request("PUT", "/cells/%s/files?path=/tmp/go" % cid, b"")
        seen += list(ev)
        conn.close()
        c.request("POST", "/cells/%s/exec" % cid, {"cmd": "rm -f /tmp/go"})
        out = "".join(e["data"] for e in seen if e.get("type") == "stdout")
        err = "".join(e["data"] for e in seen if e.get("type") == "stderr")
        last = seen[-1] if seen else {}
        ok(out == "first\nsecond\n" and err == "e\u00e9\n", "/%s: the events add up to the output" % route, seen)
        ok(last.get("type") == "result" and last.get("run_result", {}).get("return_code") == 4
           and last["run_result"]["stdout"] == out, "/%s: one result last, with the exit code" % route, last)
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200, "DELETE the /run cell", (st, got))


# ---- a directory as a tar stream (GET/PUT /cells/{id}/files) ----

def tar_of(entries):
    """entries: (name, bytes or None for a directory, or ("link", target))"""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            i = tarfile.TarInfo(name)
            if data is None:
                i.type, i.mode = tarfile.DIRTYPE, 0o755
                t.addfile(i)
            elif isinstance(data, tuple):
                i.type, i.linkname = tarfile.SYMTYPE, data[1]
                t.addfile(i)
            else:
                i.size, i.mode = len(data), 0o644
                t.addfile(i, io.BytesIO(data))
    return b.getvalue()


def tars(c):
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201, "POST /cells for tar streams", (st, got)):
        return
    cid = got["id"]
    files = "/cells/%s/files?path=" % cid
    tarh = {"Content-Type": "application/x-tar"}
    blob = bytes(range(256)) * 100
    up = tar_of([("top", None), ("top/a.txt", b"alpha\n"), ("top/sub", None), ("top/sub/bin", blob),
                 ("top/rel", ("link", "a.txt"))])
    st, _, got = c.request("PUT", files + "tree", up, headers=tarh)
    ok(st == 200 and got.get("entries") == 5, "PUT a tar unpacks it into the directory", (st, got))
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "cat tree/top/a.txt; readlink tree/top/rel; wc -c < tree/top/sub/bin"})
    ok(st == 200 and got["stdout"] == "alpha\na.txt\n25600\n", "the unpacked files are in the cell", got)
    st, h, data = c.request("GET", files + "tree", raw=True)
    ok(st == 200 and h.get("content-type") == "application/x-tar", "GET a directory answers a tar", (st, h))
    if st == 200:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
            m = {x.name.rstrip("/").lstrip("./"): x for x in t.getmembers()}
            ok(set(m) >= {"top", "top/a.txt", "top/sub", "top/sub/bin", "top/rel"},
               "the round trip keeps every entry", sorted(m))
            ok(t.extractfile(m["top/sub/bin"]).read() == blob and t.extractfile(m["top/a.txt"]).read() == b"alpha\n"
               and m["top/rel"].issym() and m["top/rel"].linkname == "a.txt",
               "... byte for byte, the inside link as a link", sorted(m))
    # a link out of the cell is not followed (nor kept) on GET
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "mkdir -p esc && echo mine > esc/f && ln -s /etc/passwd esc/pw && ln -s / esc/root"})
    st, h, data = c.request("GET", files + "esc", raw=True)
    if ok(st == 200, "GET a directory with links out of it", (st, data[:200])):
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
            ms = t.getmembers()
            names = sorted(x.name.lstrip("./") for x in ms)
            ok("f" in names and all(not x.isfile() or x.size < 100 for x in ms)
               and not any(b"root:" in (t.extractfile(x).read() if x.isfile() else b"") for x in ms)
               and "pw" not in names and "root" not in names,
               "links out of the cell are left out, never followed", names)
    # a path that is itself a link to a directory: 400, saying so, and no host path
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "ln -s tree lnk && ln -s /testbed/tree alnk && ln -s /etc elnk"})
    for p in ("lnk", "alnk", "elnk", "/testbed/lnk"):
        st, _, got = c.request("GET", files + p)
        detail = got.get("detail", "") if isinstance(got, dict) else str(got)
        ok(st == 400 and "symbolic link" in detail and "/tmp" not in detail and "sandcell-files" not in detail
           and "serve-tmp" not in detail, "GET of %s, a link to a directory: 400 without a host path" % p, (st, got))
    st, h, data = c.request("GET", files + "lnk/top", raw=True)
    ok(st == 200 and h.get("content-type") == "application/x-tar",
       "... a directory reached through a link on the way is sent", (st, data[:200]))
    # refused tars
    for what, bad in (("a '..' name", [("ok", b"x"), ("../evil", b"x")]),
                      ("an absolute name", [("/abs-evil", b"x")]),
                      ("a '..' inside a name", [("a/../../evil2", b"x")])):
        st, _, got = c.request("PUT", files + "bad", tar_of(bad), headers=tarh)
        ok(st == 400 and "refused" in str(got.get("detail", "")), "a tar with %s is refused" % what, (st, got))
    st, _, got = c.request("POST", "/cells/%s/exec" % cid,
                           {"cmd": "ls -a /testbed/bad 2>&1; ls / /testbed | grep -c evil"})
    ok(st == 200 and got["stdout"].strip().endswith("0"), "... and nothing of it is in the cell", got)
    st, _, got = c.request("PUT", files + "notar", b"this is not a tar at all" * 40, headers=tarh)
    ok(st == 400, "a body that is not a tar is 400", (st, got))
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200, "DELETE the tar cell", (st, got))


# ---- concurrency ----

def concurrency(c, nclients, nreq):
    wrong, errors, busy = [], [], [0]
    lock = threading.Lock()

    def worker(k):
        for i in range(nreq):
            a, b = 1000 + k, 7 + i
            body = {"code": "import sys\nx=int(sys.stdin.read())\nprint(x*%d)" % b,
                    "language": "python", "stdin": str(a), "run_timeout": 60}
            for attempt in range(600):
                try:
                    st, h, got = c.request("POST", "/run_code", body)
                except Exception as e:  # noqa: BLE001 - a test reports every failure
                    with lock:
                        errors.append(repr(e))
                    break
                if st in (503, 504):
                    with lock:
                        busy[0] += 1
                    time.sleep(float(h.get("retry-after", "1")))
                    continue
                if st != 200 or got.get("status") != "Success" or \
                        got["run_result"]["stdout"] != "%d\n" % (a * b):
                    with lock:
                        wrong.append((st, got))
                break

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(nclients)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.time() - t0
    ok(not errors, "%d clients x %d requests: no transport errors" % (nclients, nreq), errors[:3])
    ok(not wrong, "%d clients x %d requests: every answer is right" % (nclients, nreq), wrong[:2])
    print("# %d requests in %.1f s (%.1f/s), %d answered 503 and retried" %
          (nclients * nreq, dt, nclients * nreq / dt, busy[0]))


def gone(c):
    """A cell whose init died (killed from the host) answers 410, and
    DELETE still removes it."""
    st, _, got = c.request("POST", "/cells", {})
    ok(st == 201, "gone: a cell is made", (st, got))
    if st != 201:
        return
    cid = got["id"]
    mark = "sc-gone-%d-%d" % (os.getpid(), int(time.time()))
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": [
        "bash", "-c", "(exec -a %s sleep 600) </dev/null >/dev/null 2>&1 &" % mark]})
    ok(st == 200 and got.get("exit_code") == 0, "gone: a process left running in it", (st, got))
    init = None
    for _ in range(600):  # up to 30 s for the subshell to exec sleep
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and open("/proc/%s/cmdline" % p, "rb").read().startswith(mark.encode()):
                    status = open("/proc/%s/status" % p).read()
                    init = int(re.search(r"^PPid:\s*(\d+)", status, re.M).group(1))
            except (OSError, AttributeError):
                continue
        if init:
            break
        time.sleep(0.05)
    nspid = open("/proc/%d/status" % init).read() if init else ""
    ok(init and re.search(r"^NSpid:.*\s1$", nspid, re.M), "gone: its init found from the host", init)
    if not init:
        return
    os.kill(init, signal.SIGKILL)
    for _ in range(200):
        if not os.path.exists("/proc/%d" % init):
            break
        time.sleep(0.05)
    st, _, got = c.request("POST", "/cells/%s/exec" % cid, {"argv": ["true"]})
    ok(st == 410 and "gone" in json.dumps(got), "gone: exec answers 410 once its init died", (st, got))
    st, _, got = c.request("DELETE", "/cells/%s" % cid)
    ok(st == 200, "gone: DELETE removes it", (st, got))


def fds(c, n):
    """n idle connections held open, so that the server's next ones have
    fds above select()'s FD_SETSIZE (1024): they are served all the same."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 256
    if hard != resource.RLIM_INFINITY and hard < want:
        print("skip - fds: the hard RLIMIT_NOFILE is %d, %d needed" % (hard, want))
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    held = []
    try:
        for _ in range(n):
            held.append(socket.create_connection((c.host, c.port), timeout=60))
        try:
            st, _, got = c.request("GET", "/ping")
        except OSError as e:
            st, got = None, repr(e)
        ok(st == 200 and got == "pong", "with %d connections held, GET /ping is answered" % n,
           (st, got))
        try:
            st, _, got = c.request("POST", "/run_code", {"code": "print(6*7)", "language": "python"})
        except OSError as e:
            st, got = None, {"error": repr(e)}
        ok(st == 200 and got.get("run_result", {}).get("stdout") == "42\n",
           "... and so is a /run_code", (st, got))
    finally:
        for s in held:
            s.close()


# ---- hostile input ----

def raw(c, data, timeout=60, read=True):
    s = socket.create_connection((c.host, c.port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return s
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        if read:
            s.close()


def alive(c, what):
    st, _, got = c.request("GET", "/v1/ping")
    ok(st == 200 and got == "pong", "the server still answers after " + what, (st, got))


def hostile(c):
    auth_h = "Authorization: Bearer %s\r\n" % c.token
    # a declared 100 MB body: refused before it is read
    out = raw(c, ("POST /run_code HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\n"
                  "Content-Length: 104857600\r\n\r\n" % auth_h).encode() + b"{" * 1000)
    ok(out.startswith(b"HTTP/1.1 413"), "a declared 100 MB body is 413 at once", out[:200])
    alive(c, "a 100 MB Content-Length")
    # 100 MB sent chunked: the connection is dropped past the limit
    s = raw(c, ("POST /run_code HTTP/1.1\r\nHost: x\r\n%sTransfer-Encoding: chunked\r\n\r\n" % auth_h).encode(),
            read=False)
    chunk = b"%x\r\n" % (1 << 20) + b"a" * (1 << 20) + b"\r\n"
    sent, dropped = 0, False
    try:
        for _ in range(100):
            s.sendall(chunk)
            sent += 1
        s.sendall(b"0\r\n\r\n")
        reply = s.recv(4096)
        dropped = reply == b"" or reply.startswith(b"HTTP/1.1 413")
    except (BrokenPipeError, ConnectionResetError):
        dropped = True
    s.close()
    ok(dropped, "a 100 MB chunked body is cut off (after %d MB)" % sent)
    alive(c, "a 100 MB chunked body")
    # deep JSON
    for name, body in (("[[[...]]] 100000 deep", "[" * 100000 + "]" * 100000),
                       ('{"code": ..., "x": {{{...}}}}', '{"code":"print(1)","x":' + '{"a":' * 50000 + "1" + "}" * 50001)):
        st, _, got = c.request("POST", "/run_code", body)
        ok(st == 422, "deep JSON (%s) is 422" % name, (st, got))
    alive(c, "deep JSON")
    # paths with ..
    for p in ("/cells/../v1/ping", "/v1/../run_code", "/cells/%2e%2e/exec", "/./v1/ping"):
        out = raw(c, ("GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % (p, auth_h)).encode())
        ok(out.startswith(b"HTTP/1.1 400") or out.startswith(b"HTTP/1.1 404"),
           "path %s is refused (400/404)" % p, out[:120])
    # a long path of quotes and newlines: refused, and its log line stays one JSON line
    out = raw(c, ("GET /%s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % ("%0a%22%01" * 80, auth_h)).encode())
    ok(out[9:12] in (b"404", b"400", b"414"), "a long path of control characters is refused", out[:120])
    # a header section that never ends, and a body that never finishes
    for name, data in (("a request head that never ends", b"GET /v1/ping HTTP/1.1\r\nHost: x\r\nX-Slow: 1"),
                       ("a body that never finishes", ("POST /run_code HTTP/1.1\r\nHost: x\r\n%s"
                                                      "Content-Length: 100\r\n\r\n{\"code\":" % auth_h).encode())):
        s = raw(c, data, read=False)
        s.settimeout(120)
        t0 = time.time()
        try:
            closed = s.recv(4096) is not None
        except (ConnectionResetError, socket.timeout):
            closed = False
        s.close()
        ok(closed, "%s: the server drops the connection (after %.0f s)" % (name, time.time() - t0))
    # a head sent one line a second (each resets an idle timeout): dropped at the head's deadline
    s = raw(c, b"GET /v1/ping HTTP/1.1\r\nHost: x\r\n", read=False)
    t0, dropped = time.time(), False
    try:
        for i in range(60):
            time.sleep(1)
            s.sendall(b"X-Slow-%d: 1\r\n" % i)
    except OSError:
        dropped = True
    s.close()
    ok(dropped, "a head trickled one line a second is dropped (after %.0f s)" % (time.time() - t0))
    # a head larger than the limit
    out = raw(c, ("GET /v1/ping HTTP/1.1\r\nHost: x\r\n%sX-Big: %s\r\n\r\n" % (auth_h, "a" * 200000)).encode())
    ok(out == b"" or out[9:12] in (b"431", b"413", b"400"), "a 200 KB header is refused", out[:120])
    alive(c, "the slow and large requests")


def busy(c):
    """--max-concurrency 1: a second request while one runs gets 503 + Retry-After."""
    result = {}

    def slow():
        for _ in range(600):  # a ping may hold the one slot for a moment
            result["slow"] = c.request("POST", "/run_code", {"code": "import time\ntime.sleep(20)\nprint('done')",
                                                              "run_timeout": 60})
            if result["slow"][0] not in (503, 504):
                break
            time.sleep(0.1)
    t = threading.Thread(target=slow)
    t.start()
    seen, pings = None, []
    while t.is_alive() and seen is None:
        st, h, got = c.request("GET", "/cells")
        if st == 503:
            seen = (st, h, got)
            pings = [c.request("GET", "/v1/ping")[0] for _ in range(5)]  # the slot is still taken
        time.sleep(0.05)
    seen_sf = None
    while t.is_alive() and seen_sf is None:
        st, h, got = c.request("POST", "/run_code", {"code": "print(1)"})
        if st == 504:
            seen_sf = (st, h, got)
        time.sleep(0.05)
    t.join()
    ok(seen is not None and "retry-after" in seen[1], "a request over --max-concurrency is 503 with Retry-After",
       seen)
    ok(pings and all(x == 200 for x in pings), "/v1/ping is answered while every slot is taken", pings)
    ok(seen_sf is not None and "retry-after" in seen_sf[1],
       "... and /run_code says 504 (SandboxFusion's clients retry it) with Retry-After", seen_sf)
    st, _, got = result.get("slow", (0, 0, 0))
    ok(st == 200 and got["run_result"]["stdout"] == "done\n", "the request in flight is answered", got)
    st, _, got = c.request("GET", "/v1/ping")
    ok(st == 200 and got == "pong", "the unix socket needs no token", (st, got))


def slow(c):
    """One request that runs for a few seconds: it must be answered even if
    the server is told to stop meanwhile."""
    st, _, got = c.request("POST", "/run_code", {"code": "import time\ntime.sleep(12)\nprint('drained')",
                                                  "run_timeout": 60})
    ok(st == 200 and got["run_result"]["stdout"] == "drained\n", "the request in flight at SIGTERM is answered",
       (st, got))


# ---- slow clients (t_serve_slow.sh) ----

class Attack:
    """Connections that hold the server without finishing a request: heads
    sent one line every 5 s (no token), and bodies with the token sent one
    byte every 2 s. Each reconnects 1 s after the server drops it."""

    def __init__(self, c, heads, bodies):
        self.c, self.stop = c, threading.Event()
        self.lock = threading.Lock()
        self.stats = {"connects": 0, "dropped": 0, "refused": 0}
        head = b"GET /cells HTTP/1.1\r\nHost: x\r\n"
        body = ("POST /run_code HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n" % c.token).encode()
        self.threads = [threading.Thread(target=self.run, args=(head, lambda i: b"X-Slow-%d: 1\r\n" % i, 5.0))
                        for _ in range(heads)]
        self.threads += [threading.Thread(target=self.run, args=(body, lambda i: b" ", 2.0))
                         for _ in range(bodies)]

    def count(self, k):
        with self.lock:
            self.stats[k] += 1

    def run(self, first, more, every):
        while not self.stop.is_set():
            try:
                s = socket.create_connection((self.c.host, self.c.port), timeout=2)
            except OSError:
                self.count("refused")
                self.stop.wait(1)
                continue
            try:
                s.sendall(first)
                self.count("connects")
                i = 0
                while not self.stop.wait(every):
                    s.setblocking(False)
                    try:
                        if s.recv(4096) == b"":
                            break  # closed by the server
                    except BlockingIOError:
                        pass
                    s.setblocking(True)
                    s.settimeout(2)
                    s.sendall(more(i))
                    i += 1
                else:
                    continue
                self.count("dropped")
            except OSError:
                self.count("dropped")
            finally:
                s.close()
            self.stop.wait(1)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()


def slow_attack(c, seconds, heads, bodies):
    """While the attack goes on, a client gets every answer: /v1/ping each
    second, a /run_code every 5 s."""
    pings, runs, bad, worst = 0, 0, [], 0.0
    with Attack(c, heads, bodies) as a:
        time.sleep(5)  # let the attack take hold
        t_end = time.time() + seconds
        k = 0
        while time.time() < t_end:
            t0 = time.time()
            try:
                if k % 5 == 0:
                    st, _, got = c.request("POST", "/run_code", {"code": "print(6*7)", "run_timeout": 20})
                    runs += 1
                    if st != 200 or got.get("run_result", {}).get("stdout") != "42\n":
                        bad.append(("run_code", st, got))
                else:
                    st, _, got = c.request("GET", "/v1/ping")
                    pings += 1
                    if st != 200 or got != "pong":
                        bad.append(("ping", st, got))
            except Exception as e:  # noqa: BLE001 - every failure is reported
                bad.append(("error", repr(e)))
            worst = max(worst, time.time() - t0)
            k += 1
            time.sleep(max(0.0, 1.0 - (time.time() - t0)))
        stats = dict(a.stats)
    print("# %d s under %d trickled heads and %d slow bodies: %d pings, %d /run_code, slowest answer %.2f s;"
          " attack: %d connections, %d dropped by the server, %d refused" %
          (seconds, heads, bodies, pings, runs, worst, stats["connects"], stats["dropped"], stats["refused"]))
    ok(not bad and pings and runs, "every /v1/ping and /run_code is answered during the attack", bad[:3])
    ok(stats["dropped"] >= heads, "the server drops the connections that trickle their request", stats)


def peer_cap(c):
    """A server with --max-connections-per-peer 2: a new connection drops
    the peer's one still waiting for a head; with none waiting (both
    busy), it is answered 503 with Retry-After, not reset.  The busy runs
    last 12 s, so a slow host (ASan, a loaded CI) still finds both in
    flight when it checks, a few seconds in."""
    def busy_run():
        return threading.Thread(target=c.request, args=("POST", "/run_code", {
            "code": "import time\ntime.sleep(12)", "run_timeout": 30}))
    a = busy_run()
    a.start()
    time.sleep(1.5)
    idle = socket.create_connection((c.host, c.port), timeout=30)  # sends nothing
    time.sleep(0.5)
    st, _, got = c.request("GET", "/v1/ping")
    ok(st == 200 and got == "pong", "at the cap, a new connection is served", (st, got))
    try:
        gone = idle.recv(1) == b""
    except OSError:
        gone = True
    idle.close()
    ok(gone, "... and the peer's connection that sent no head was dropped for it")
    b = busy_run()
    b.start()
    time.sleep(1)
    st, h, got = c.request("GET", "/cells")
    busy = (a.is_alive(), b.is_alive())
    ok(st == 503 and "retry-after" in h, "at the cap with both busy: 503 with Retry-After",
       (st, h, got, "busy runs still in flight: %s" % (busy,)))
    a.join()
    b.join()
    st, _, got = c.request("GET", "/cells")
    ok(st == 200, "once they are done, the peer is served again", (st, got))


def drain(c):
    """Two requests that run for 120 s (an exec in a cell, a /run_code):
    once the server is told to stop, each gets an answer or a closed
    connection (no hang). Prints '# running' once both run."""
    st, _, got = c.request("POST", "/cells", {})
    if not ok(st == 201, "drain: a cell is made", (st, got)):
        return
    cid = got["id"]
    res = {}

    def one(name, method, path, body):
        t0 = time.time()
        try:
            st, _, got = c.request(method, path, body)
            res[name] = ("answered %d" % st, time.time() - t0, got)
        except (OSError, http.client.HTTPException) as e:
            res[name] = ("closed (%s)" % type(e).__name__, time.time() - t0, None)
    ts = [threading.Thread(target=one, args=("exec", "POST", "/cells/%s/exec" % cid,
                                             {"cmd": "sleep 120", "timeout": 300})),
          threading.Thread(target=one, args=("run_code", "POST", "/run_code",
                                             {"code": "import time\ntime.sleep(120)", "run_timeout": 300}))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for name in ("exec", "run_code"):
        how, dt, got = res.get(name, ("no result", 0, None))
        ok(how.startswith("answered") or how.startswith("closed"),
           "drain: the %s in flight at SIGTERM ends: %s after %.1f s" % (name, how, dt), got)
        ok(dt < 90, "drain: ... well before its 120 s were up", dt)


def bigput(c, mb):
    """PUT a tar of about `mb` MiB of 512-byte files into a new cell (the
    server is killed meanwhile: no result is checked). Small files: the
    unpacking and the copy take seconds, not the transfer."""
    st, _, got = c.request("POST", "/cells", {})
    if st != 201:
        print("FAIL - bigput: no cell (%s)" % st)
        return
    blob = os.urandom(512)  # a tar entry of 1 KiB with its header
    entries = [("big", None)] + [("big/f%05d" % i, blob) for i in range(mb * 1000)]
    print("# running")
    sys.stdout.flush()
    try:
        c.request("PUT", "/cells/%s/files?path=big" % got["id"], tar_of(entries),
                  headers={"Content-Type": "application/x-tar"})
    except (OSError, http.client.HTTPException):
        pass


def tls(c, cafile):
    import ssl
    ctx = ssl.create_default_context(cafile=cafile)
    conn = http.client.HTTPSConnection("127.0.0.1", c.port, timeout=60, context=ctx)
    conn.request("GET", "/v1/ping", headers={"Authorization": "Bearer " + c.token})
    r = conn.getresponse()
    ok(r.status == 200 and json.loads(r.read()) == "pong", "GET /v1/ping over TLS", r.status)
    conn.close()
    try:
        st, _, _ = c.request("GET", "/v1/ping")
        ok(st != 200, "plain HTTP to the TLS port is not served", st)
    except (http.client.HTTPException, OSError):
        ok(True, "plain HTTP to the TLS port is not served")


def main():
    url, token, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
    c = Client(url, token)
    if cmd == "golden":
        golden(c, sys.argv[4], "--no-cpp" in sys.argv)
    elif cmd == "auth":
        auth(c)
    elif cmd == "cells":
        cells(c)
    elif cmd == "stream":
        stream(c)
    elif cmd == "run":
        run_route(c, "--no-cpp" not in sys.argv)
    elif cmd == "bytecode":
        bytecode(c, int(sys.argv[4]))
    elif cmd == "tar":
        tars(c)
    elif cmd == "code":
        code(c, "--plots" in sys.argv)
    elif cmd == "concurrency":
        concurrency(c, int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "hostile":
        hostile(c)
    elif cmd == "gone":
        gone(c)
    elif cmd == "fds":
        fds(c, int(sys.argv[4]))
    elif cmd == "busy":
        busy(c)
    elif cmd == "slow":
        slow(c)
    elif cmd == "slow-attack":
        slow_attack(c, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "peer-cap":
        peer_cap(c)
    elif cmd == "drain":
        drain(c)
    elif cmd == "bigput":
        bigput(c, int(sys.argv[4]))
    elif cmd == "tls":
        tls(c, sys.argv[4])
    else:
        sys.exit("unknown subcommand " + cmd)
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
