"""The HTTP client of `sandcell serve` (http.client, over TCP or AF_UNIX) and
the private server it starts: a `sandcell serve` on a unix socket in a 0700
temporary directory, stopped on close() or at exit.

Everything read from the server is bounded (MAX_JSON for an answer or one
NDJSON line, MAX_FILE for a file, MAX_TAR for a directory's tar stream), and
so is the time: a call's timeout is one deadline for the whole exchange
(connecting, sending, the answer's headers and body), not a bound on each
socket operation that a server sending a byte at a time would renew."""

import atexit
import http.client
import json
import os
import queue
import shutil
import stat
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from .exceptions import SandboxError

MAX_JSON = 256 << 20       # one answer or one NDJSON line (output, plots)
MAX_FILE = (16 << 20) + 1  # the server's per-file limit, one byte over it
MAX_TAR = (1 << 30) + (1 << 20)
START_TIMEOUT = 120.0      # seconds for a private server to answer
DEFAULT_HTTP_TIMEOUT = 300.0  # seconds a request may take (a loaded host is slow)


class DeadlineExceeded(SandboxError, socket.timeout):
    """A call's deadline passed before the exchange was complete: a
    SandboxError, and a socket timeout (an OSError) to http.client."""

    def __init__(self, msg="no complete answer from the sandcell server before the call's deadline"):
        super().__init__(msg)


class _DeadlineSocket(socket.socket):
    """A socket whose every wait ends at one monotonic deadline: before each
    receive or send its timeout is set to the time left, so a server that
    sends a byte at a time cannot stretch a call beyond it."""

    __slots__ = ("deadline",)

    def _left(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded()
        self.settimeout(left)

    def _io(self, op, *a):
        self._left()
        try:
            return op(*a)
        except socket.timeout:
            raise DeadlineExceeded() from None

    def recv(self, *a):
        return self._io(super().recv, *a)

    def recv_into(self, *a):
        return self._io(super().recv_into, *a)

    def send(self, *a):
        return self._io(super().send, *a)

    def sendall(self, *a):
        return self._io(super().sendall, *a)


def _deadline_socket(sock, deadline):
    s = _DeadlineSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    s.deadline = deadline
    s._left()
    return s


class _Connection(http.client.HTTPConnection):
    """HTTPConnection (TCP, or a unix socket when unix_path is given) whose
    socket keeps to one deadline for the whole exchange."""

    def __init__(self, host, port, unix_path, timeout):
        super().__init__(host or "localhost", port, timeout=timeout)
        self._unix_path = unix_path
        self.deadline = time.monotonic() + timeout

    def connect(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded()
        if self._unix_path:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(left)
            try:
                s.connect(self._unix_path)
            except OSError:
                s.close()
                raise
        else:
            s = socket.create_connection((self.host, self.port), left)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = _deadline_socket(s, self.deadline)


def _read_bounded(resp, limit, what):
    data = resp.read(limit + 1)
    if len(data) > limit:
        raise SandboxError("%s: the server sent more than %d bytes" % (what, limit))
    return data


def _late(method, path, timeout):
    return SandboxError("%s %s: no complete answer within the call's %g s" % (method, path, timeout))


class HTTPError(SandboxError):
    def __init__(self, status, detail):
        super().__init__("HTTP %d: %s" % (status, detail))
        self.status, self.detail = status, detail


class Client:
    """One sandcell server: base URL (http://HOST:PORT or unix:PATH) and token."""

    def __init__(self, url, token=None):
        self.token = token
        if url.startswith("unix:"):
            self.unix, self.host, self.port = url[5:], None, None
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http" or not u.hostname:
                raise SandboxError("SANDCELL_URL: expected http://HOST:PORT or unix:PATH, not %r" % url)
            self.unix, self.host, self.port = None, u.hostname, u.port or 80
            self.prefix = u.path.rstrip("/")
        if self.unix:
            self.prefix = ""

    def _conn(self, timeout):
        return _Connection(self.host, self.port, self.unix, timeout)

    def _headers(self, extra):
        h = {"Connection": "close"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def open(self, method, path, body=None, headers=None, timeout=DEFAULT_HTTP_TIMEOUT):
        """Send a request; (connection, response). The caller closes both;
        reading the response keeps to the same deadline (timeout seconds
        from now, for the whole exchange)."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = dict(headers or {}, **{"Content-Type": "application/json"})
        c = self._conn(timeout)
        try:
            c.request(method, self.prefix + path, body=body, headers=self._headers(headers))
            return c, c.getresponse()
        except socket.timeout as e:
            c.close()
            raise _late(method, path, timeout) from e
        except (OSError, http.client.HTTPException) as e:
            c.close()
            raise SandboxError("cannot reach the sandcell server: %s" % e) from e

    def call(self, method, path, body=None, headers=None, timeout=DEFAULT_HTTP_TIMEOUT, limit=MAX_JSON):
        """(status, content type, bytes of the body)."""
        c, r = self.open(method, path, body, headers, timeout)
        try:
            return r.status, r.getheader("Content-Type", ""), _read_bounded(r, limit, path)
        except socket.timeout as e:
            raise _late(method, path, timeout) from e
        except (OSError, http.client.HTTPException) as e:
            raise SandboxError("reading the answer to %s: %s" % (path, e)) from e
        finally:
            c.close()

    def json(self, method, path, body=None, timeout=DEFAULT_HTTP_TIMEOUT, ok=(200, 201)):
        """The answer's JSON object; SandboxError for anything else."""
        st, ctype, data = self.call(method, path, body, timeout=timeout)
        try:
            got = json.loads(data) if data else None
        except ValueError:
            got = None
        if st not in ok:
            detail = got.get("detail") if isinstance(got, dict) else data[:300].decode(errors="replace")
            raise HTTPError(st, detail)
        if not isinstance(got, dict):
            raise SandboxError("%s %s: HTTP %d with %s, not a JSON object (is %s a sandcell server?)"
                               % (method, path, st, "an empty body" if not data else
                                  "%r (%s)" % (data[:100], ctype or "no content type"),
                                  self.unix and "unix:" + self.unix or "%s:%s" % (self.host, self.port)))
        return got

    def stream(self, path, body, timeout):
        """POST with Accept: application/x-ndjson; yields the events."""
        c, r = self.open("POST", path, body, {"Accept": "application/x-ndjson"}, timeout)
        try:
            if r.status != 200:
                data = _read_bounded(r, MAX_JSON, path)
                try:
                    detail = json.loads(data).get("detail")
                except (ValueError, AttributeError):
                    detail = data[:300].decode(errors="replace")
                raise HTTPError(r.status, detail)
            while True:
                line = r.readline(MAX_JSON + 1)
                if not line:
                    return
                if len(line) > MAX_JSON:
                    raise SandboxError("%s: an event larger than %d bytes" % (path, MAX_JSON))
                ev = json.loads(line)
                if not isinstance(ev, dict):
                    raise SandboxError("%s: an event that is not a JSON object: %r" % (path, line[:100]))
                yield ev
        except socket.timeout as e:
            raise _late("POST", path, timeout) from e
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise SandboxError("reading the stream of %s: %s" % (path, e)) from e
        finally:
            c.close()


# ---- the sandcell binary and private servers ----

def find_binary():
    """SANDCELL_BIN, else `sandcell` on PATH, else the repository's build/sandcell."""
    b = os.environ.get("SANDCELL_BIN")
    if b:
        return b
    b = shutil.which("sandcell")
    if b:
        return b
    here = Path(__file__).resolve().parent.parent.parent
    b = here / "build" / "sandcell"
    if b.is_file() and os.access(b, os.X_OK):
        return str(b)
    raise SandboxError("no sandcell binary: set SANDCELL_BIN, put sandcell on PATH, "
                       "or build it (cmake --build build)")


def _pdeathsig():
    # the server goes when this process goes (the launcher thread lives as
    # long as the process: see _Launcher)
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


class _Launcher:
    """One thread that starts every private server: PR_SET_PDEATHSIG fires
    when the thread that forked the child ends, so that thread must live as
    long as the process."""

    def __init__(self):
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._run, name="sandcell-launcher", daemon=True)
        self.t.start()

    def _run(self):
        while True:
            argv, kw, box, done = self.q.get()
            try:
                box.append(subprocess.Popen(argv, preexec_fn=_pdeathsig, **kw))
            except Exception as e:  # noqa: BLE001 - handed to the caller
                box.append(e)
            done.set()

    def popen(self, argv, **kw):
        box, done = [], threading.Event()
        self.q.put((argv, kw, box, done))
        done.wait()
        if isinstance(box[0], Exception):
            raise box[0]
        return box[0]


_launcher = None
_servers = {}
_servers_lock = threading.Lock()


_DIR_PREFIX = "sandcell-py-"


def _sweep_stale_dirs():
    """Remove the directories of private servers whose Python process died
    without cleaning up (SIGKILL): sandcell-py-PID-*, ours, PID gone. The
    server itself died with its parent (the parent-death signal)."""
    top = tempfile.gettempdir()
    try:
        names = os.listdir(top)
    except OSError:
        return
    for name in names:
        if not name.startswith(_DIR_PREFIX):
            continue
        pid = name[len(_DIR_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or os.path.exists("/proc/" + pid):
            continue
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)


class PrivateServer:
    """`sandcell serve --listen unix:DIR/s` with DIR a fresh 0700 directory."""

    def __init__(self, args=(), pool=2):
        global _launcher
        _sweep_stale_dirs()
        self.dir = tempfile.mkdtemp(prefix="%s%d-" % (_DIR_PREFIX, os.getpid()))
        os.chmod(self.dir, 0o700)
        self.sock = os.path.join(self.dir, "s")
        self.errpath = os.path.join(self.dir, "serve.err")
        # --ephemeral: one of many private servers on the user's state
        # root, whose cells die with it (docs/api.md, "Restarts")
        argv = [find_binary(), "serve", "--listen", "unix:" + self.sock, "--ephemeral",
                "--pool", str(pool)] + list(args)
        with _servers_lock:
            if _launcher is None:
                _launcher = _Launcher()
        with open(self.errpath, "wb") as err:
            try:
                self.proc = _launcher.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=err, close_fds=True)
            except OSError as e:
                shutil.rmtree(self.dir, ignore_errors=True)
                raise SandboxError("cannot start %s: %s" % (argv[0], e)) from e
        self.client = Client("unix:" + self.sock)
        try:
            self._wait_up()
        except BaseException:
            self.stop()
            raise

    def _stderr_tail(self):
        try:
            with open(self.errpath, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 2000))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def _wait_up(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SandboxError("sandcell serve exited with %d: %s" % (self.proc.returncode, self._stderr_tail()))
            if os.path.exists(self.sock):
                try:
                    if self.client.call("GET", "/v1/ping", timeout=10)[0] == 200:
                        return
                except SandboxError:
                    pass
            time.sleep(0.02)
        raise SandboxError("sandcell serve did not answer within %.0f s: %s" % (START_TIMEOUT, self._stderr_tail()))

    def stop(self):
        p = getattr(self, "proc", None)
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def private_client(args=()):
    """The client of the private server for these serve options (one per
    distinct option list, started on first use, stopped at exit)."""
    key = tuple(args)
    with _servers_lock:
        s = _servers.get(key)
        if s is not None and s.proc.poll() is None:
            return s.client
    s = PrivateServer(key)
    with _servers_lock:
        old = _servers.get(key)
        if old is not None and old.proc.poll() is None:
            other = old
        else:
            _servers[key] = s
            other = None
    if other is not None:  # another thread won the race
        s.stop()
        return other.client
    return s.client


def stop_private_servers():
    """Stop every private server (also done at exit)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for s in servers:
        s.stop()


atexit.register(stop_private_servers)


def default_client(server_args=(), warn=None):
    """SANDCELL_URL (with SANDCELL_TOKEN), else a private server."""
    url = os.environ.get("SANDCELL_URL")
    if url:
        if server_args and warn:
            warn("SANDCELL_URL is set: the server's own limits apply, not %s" % " ".join(server_args))
        return Client(url, os.environ.get("SANDCELL_TOKEN"))
    return private_client(server_args)

