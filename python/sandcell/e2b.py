"""An E2B-style facade (e2b_code_interpreter's shapes) over one cell:
run_code in a kept Python interpreter (other languages: a fresh process),
commands.run, files.read/write/list, kill."""

import ast
import http.client
import json
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import List, Optional

from .exceptions import CommandExitException, ForkError, SandboxError, SandboxTimeoutError
from .session import HTTP_SLACK, InteractiveSandboxSession, check_cell_path


@dataclass
class Result:
    """One result of run_code: a plot (png), or the value of the code's
    last expression (text: its repr, is_main_result=True)."""
    png: Optional[str] = None
    text: Optional[str] = None
    is_main_result: bool = False

    def formats(self):
        return [k for k in ("png", "text") if getattr(self, k)]


@dataclass
class Logs:
    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)


@dataclass
class ExecutionError:
    name: str
    value: str
    traceback: str


@dataclass
class Execution:
    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None

    @property
    def text(self):
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None


@dataclass
class CommandResult:
    stdout: str
    stderr: str
    exit_code: int
    error: Optional[str] = None


@dataclass
class EntryInfo:
    name: str
    type: str   # "file" or "dir" (anything else: "other")
    path: str
    size: int = 0


def _error_of(stderr):
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "Error"
    m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)?):\s?(.*)$", last)
    if m:
        return ExecutionError(name=m.group(1), value=m.group(2), traceback=stderr)
    return ExecutionError(name="Error", value=last, traceback=stderr)


# a background command's first line of stdout is its pid in the cell (the
# shell that prints it execs the command's own shell)
_PID_WRAPPER = 'echo $$ && exec /bin/sh -c "$1"'
KILLED_EXIT = 137  # 128 + SIGKILL, as sandcell reports a command killed by SIGKILL


class CommandHandle:
    """E2B's handle of a background command: pid, wait(), kill(), and the
    output so far (stdout, stderr). The command runs as a streamed exec;
    kill() hangs up, and the server kills the command."""

    def __init__(self, session, body, on_stdout=None, on_stderr=None):
        self._on = [on_stdout, on_stderr]
        self._out, self._err = [], []
        self._result, self._failure, self._killed = None, None, False
        self._pid_buf = ""
        self.pid = None
        self._started, self._lock = threading.Event(), threading.Lock()
        t = float(body.get("timeout", 60))
        cl = session._client
        self._conn = cl._conn(t + HTTP_SLACK)
        try:
            self._conn.request("POST", cl.prefix + "/cells/%s/exec" % session.cell_id,
                               body=json.dumps(body).encode(),
                               headers=cl._headers({"Content-Type": "application/json",
                                                    "Accept": "application/x-ndjson"}))
            # kept: the connection lets go of its socket to the response
            self._sock = self._conn.sock
            r = self._conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            self._conn.close()
            raise SandboxError("background command: cannot reach the sandcell server: %s" % e) from e
        if r.status != 200:
            detail = r.read(300).decode(errors="replace")
            self._conn.close()
            raise SandboxError("background command: HTTP %d %s" % (r.status, detail))
        self._thread = threading.Thread(target=self._pump, args=(r,), name="sandcell-command", daemon=True)
        self._thread.start()
        self._started.wait(t + HTTP_SLACK)

    def _emit(self, which, data):
        (self._out if which == 0 else self._err).append(data)
        cb = self._on[which]
        if cb:
            cb(data)

    def _stdout(self, data):
        if self.pid is None:
            self._pid_buf += data
            if "\n" not in self._pid_buf:
                return
            line, data = self._pid_buf.split("\n", 1)
            self.pid = int(line) if line.strip().isdigit() else -1
            self._started.set()
            if not data:
                return
        self._emit(0, data)

    def _pump(self, r):
        try:
            while True:
                line = r.readline(1 << 28)
                if not line:
                    break
                ev = json.loads(line)
                kind = ev.get("type")
                with self._lock:
                    if kind == "stdout":
                        self._stdout(ev.get("data", ""))
                    elif kind == "stderr":
                        self._emit(1, ev.get("data", ""))
                    elif kind == "result":
                        self._result = ev
                    elif kind == "error":
                        self._failure = SandboxError(ev.get("detail", "the command could not run"))
        except Exception as e:  # noqa: BLE001 - handed to wait()
            if not self._killed:
                self._failure = SandboxError("reading the background command's output: %s" % e)
        finally:
            r.close()
            self._conn.close()
            self._started.set()

    @property
    def stdout(self):
        return "".join(self._out)

    @property
    def stderr(self):
        return "".join(self._err)

    @property
    def exit_code(self):
        if self._killed:
            return KILLED_EXIT
        return None if self._result is None else self._result.get("exit_code", 0)

    def wait(self, on_stdout=None, on_stderr=None):
        """Wait for the command's end: its CommandResult, or
        CommandExitException (non-zero exit, or killed), SandboxTimeoutError."""
        with self._lock:  # output so far to the new callbacks, the rest as it comes
            for which, cb in ((0, on_stdout), (1, on_stderr)):
                if cb:
                    for d in (self._out if which == 0 else self._err):
                        cb(d)
                    self._on[which] = cb
        self._thread.join()
        if self._killed:
            raise CommandExitException(self.stdout, self.stderr, KILLED_EXIT, "killed")
        if self._failure is not None:
            raise self._failure
        if self._result is None:
            raise SandboxError("the background command's stream ended without a result")
        if self._result.get("timed_out"):
            raise SandboxTimeoutError("the background command ran past its timeout")
        code = self._result.get("exit_code", 0)
        if code != 0:
            raise CommandExitException(self.stdout, self.stderr, code)
        return CommandResult(stdout=self.stdout, stderr=self.stderr, exit_code=0)

    def kill(self):
        """Kill the command (True), or False when it had already ended."""
        if not self._thread.is_alive():
            return False
        self._killed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._thread.join()
        return True

    def disconnect(self):
        """E2B: stop receiving output. Here the command stops with it."""
        self.kill()


class Commands:
    def __init__(self, sbx):
        self._sbx = sbx

    def run(self, cmd, background=False, envs=None, cwd=None, on_stdout=None, on_stderr=None,
            timeout=60):
        envs = self._sbx._envs_with(envs)
        s = self._sbx._session
        if background:
            s._need_open()
            wd = check_cell_path(cwd or s.workdir, "cwd")
            if wd == s.workdir:
                s._ensure_workdir()
            body = {"argv": ["/bin/sh", "-c", _PID_WRAPPER, "sh", cmd], "cwd": wd,
                    "timeout": s._timeout(timeout)}
            if envs:
                body["env"] = envs
            return CommandHandle(s, body, on_stdout, on_stderr)
        out = s.execute_command(cmd, workdir=cwd, timeout=timeout, on_stdout=on_stdout,
                                on_stderr=on_stderr, env=envs)
        if out.exit_code != 0:
            raise CommandExitException(out.stdout, out.stderr, out.exit_code)
        return CommandResult(stdout=out.stdout, stderr=out.stderr, exit_code=0)

    def kill(self, pid):
        """Kill the process pid of the sandbox (True), False when there is none."""
        s = self._sbx._session
        return s.execute_command("kill -KILL %d" % int(pid), workdir="/", timeout=30).exit_code == 0


class Files:
    def __init__(self, sbx):
        self._sbx = sbx

    def _path(self, path):
        s = self._sbx._session
        s._need_open()
        return s._cell_dest(check_cell_path(path))

    def read(self, path, format="text"):
        s = self._sbx._session
        p = self._path(path)
        st, ctype, data = s._client.call("GET", "/cells/%s/files?path=%s" % (s.cell_id, _q(p)),
                                         limit=16 << 20)
        if st == 404:
            raise FileNotFoundError("%s: no such file in the sandbox" % path)
        if st != 200 or ctype.startswith("application/x-tar"):
            raise IsADirectoryError(path) if st == 200 else OSError("%s: HTTP %d" % (path, st))
        return data if format in ("bytes", "bytearray") else data.decode("utf-8", errors="replace")

    def write(self, path, data):
        s = self._sbx._session
        p = self._path(path)
        if isinstance(data, str):
            data = data.encode()
        elif hasattr(data, "read"):
            data = data.read()
        got = s._client.json("PUT", "/cells/%s/files?path=%s" % (s.cell_id, _q(p)), bytes(data))
        return EntryInfo(name=p.rsplit("/", 1)[-1], type="file", path=got.get("path", p), size=len(data))

    def list(self, path="."):
        s = self._sbx._session
        p = self._path(path)
        out = s.execute_command("find . -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%f\\0'", workdir=p, timeout=30)
        if out.exit_code != 0:
            raise FileNotFoundError("%s: %s" % (path, out.stderr.strip()))
        entries = []
        for rec in out.stdout.split("\0"):
            if not rec:
                continue
            kind, size, name = rec.split("\t", 2)
            t = {"f": "file", "d": "dir"}.get(kind, "other")
            entries.append(EntryInfo(name=name, type=t, path=p.rstrip("/") + "/" + name, size=int(size)))
        return sorted(entries, key=lambda e: e.name)

    def exists(self, path):
        s = self._sbx._session
        p = self._path(path)
        return s.execute_command("test -e %s" % _sh(p), workdir="/", timeout=30).exit_code == 0

    def remove(self, path):
        s = self._sbx._session
        s.execute_command("rm -rf -- %s" % _sh(self._path(path)), workdir="/", timeout=60)


def _q(p):
    import urllib.parse
    return urllib.parse.quote(p, safe="/")


def _sh(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _split_last_expression(code):
    """(code before the last statement, its expression's source, whether
    a trailing ';' hides it) when the code's last top-level statement is an
    expression, else None (also for code Python cannot parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return None
    node = tree.body[-1].value
    lines = code.splitlines(True)

    def offset(lineno, col):  # ast columns count UTF-8 bytes
        return sum(len(x) for x in lines[:lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())

    start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
    rest = re.sub(r"#[^\n]*", "", code[end:])
    return code[:start], code[start:end], rest.strip().startswith(";")


# the value of the last expression is written here (a nonce line first),
# not printed: it becomes Execution.text, not a line of stdout
_RESULT_FILE = "/tmp/.sandcell-e2b-result"


class Sandbox:
    """Sandbox.create() -> a cell with a kept Python interpreter.

    timeout: the sandbox's lifetime in seconds (E2B's meaning; 0: none): it is
    killed then, by this process. envs: environment variables of every
    command and of the Python code."""

    # SandboxSession arguments that Sandbox passes on (sandcell's own)
    _SESSION_ARGS = ("runtime_configs", "libraries", "security_policy", "verbose")

    def __init__(self, template=None, timeout=300, envs=None, workdir="/home/user", metadata=None,
                 allow_internet_access=None, **kwargs):
        bad = sorted(k for k in kwargs if k not in self._SESSION_ARGS)
        if bad:
            raise TypeError("Sandbox(): %s not supported by sandcell (it takes template, timeout, envs, "
                            "metadata, workdir, allow_internet_access=False and %s)"
                            % (", ".join(bad), ", ".join(self._SESSION_ARGS)))
        if allow_internet_access:
            raise TypeError("Sandbox(allow_internet_access=True): not supported; cells have no network "
                            "but loopback (give runtime_configs={'allow_net': [HOST, ...]} for an "
                            "egress allowlist)")
        session = InteractiveSandboxSession(lang="python", image=template, workdir=workdir,
                                            default_timeout=60, **kwargs)
        session.open()
        self._start(session, envs, metadata, timeout)

    def _start(self, session, envs, metadata, timeout):
        """Self on an open session: its envs set, its lifetime started."""
        self._envs = {str(k): str(v) for k, v in (envs or {}).items()}
        self.metadata = dict(metadata or {})
        self._session = session
        self.commands = Commands(self)
        self.files = Files(self)
        self._count = 0
        self._timer = None
        self._nonce = os.urandom(8).hex()
        self._calls = 0
        try:
            if self._envs:
                self._set_env(self._envs)
            self.set_timeout(timeout)
        except BaseException:
            self.kill()
            raise

    @classmethod
    def create(cls, template=None, timeout=300, **kwargs):
        return cls(template=template, timeout=timeout, **kwargs)

    def fork(self, count=1, timeout=300, replay_sessions=False):
        """count (1..100) new sandboxes whose files equal this one's at one
        instant. This one keeps running. A child's Python starts fresh (no
        variable of this sandbox's run_code is copied), or with
        replay_sessions has run this sandbox's run_code calls again, in
        order; its envs and metadata are this one's. Raises ForkError (its
        .children are the sandboxes that were made) when some could not be
        made or replayed."""
        try:
            sessions = self._session.fork(count, replay_sessions=replay_sessions)
        except ForkError as e:
            e.children = self._adopt(e.children, timeout)
            raise
        return self._adopt(sessions, timeout)

    def _adopt(self, sessions, timeout):
        """Sandboxes on sessions (forks of this one's); none left open on
        failure."""
        out = []
        try:
            for s in sessions:
                child = type(self).__new__(type(self))
                out.append(child)
                child._start(s, self._envs, self.metadata, timeout)
        except BaseException:
            for c in out[:-1]:
                c.kill()
            for s in sessions[len(out) - 1:]:
                s.close()
            raise
        return out

    def set_timeout(self, timeout):
        """The sandbox is killed timeout seconds from now (0 or None: never)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if timeout:
            self._timer = threading.Timer(float(timeout), self.kill)
            self._timer.daemon = True
            self._timer.start()

    def _envs_with(self, envs):
        return dict(self._envs, **{str(k): str(v) for k, v in (envs or {}).items()})

    def _set_env(self, envs, keep_old=False, restore=False):
        """Python code's os.environ: envs set (keep_old: the values they
        replace kept for restore, which puts them back)."""
        code = "import os as _sc_os\n_sc_os.environ.update(%r)\ndel _sc_os\n" % envs
        if keep_old:
            code = "_sc_old = {k: __import__('os').environ.get(k) for k in %r}\n" % sorted(envs) + code
        if restore:
            code = ("import os as _sc_os\nfor _sc_k, _sc_v in _sc_old.items():\n"
                    "    if _sc_v is None:\n        _sc_os.environ.pop(_sc_k, None)\n"
                    "    else:\n        _sc_os.environ[_sc_k] = _sc_v\n"
                    "del _sc_os, _sc_k, _sc_v, _sc_old\n")
        s = self._session
        res = s._console(s._post_code("code", {"code": code, "timeout": 60}, 60 + 2 * HTTP_SLACK,
                                      None, None))
        if res.exit_code != 0:
            raise SandboxError("setting the environment of the sandbox's python: " + res.stderr[-300:])

    @property
    def sandbox_id(self):
        return self._session.cell_id

    def is_running(self):
        return self._session.is_open

    def _with_result(self, code):
        """The code, its last expression's value going to _RESULT_FILE; and
        the nonce that marks this run's value (None: no value to read)."""
        split = _split_last_expression(code)
        if split is None:
            return code, None
        head, expr, hidden = split
        self._calls += 1
        nonce = "%s-%d" % (self._nonce, self._calls)
        tail = ("_sc_v = (%s\n)\n"
                "if _sc_v is not None:\n"
                "    _ = _sc_v\n"
                "    with open(%r, 'w') as _sc_f:\n"
                "        _sc_f.write(%r + '\\n' + repr(_sc_v))\n"
                "    del _sc_f\n"
                "del _sc_v\n" % (expr, _RESULT_FILE, nonce))
        if hidden:
            tail = "_sc_v = (%s\n)\ndel _sc_v\n" % expr
        return head + tail, None if hidden else nonce

    def _read_result(self, nonce):
        s = self._session
        st, _, data = s._client.call("GET", "/cells/%s/files?path=%s" % (s.cell_id, _q(_RESULT_FILE)),
                                     limit=16 << 20)
        if st != 200:
            return None
        head, _, text = data.decode("utf-8", errors="replace").partition("\n")
        return text if head == nonce else None

    def run_code(self, code, language="python", on_stdout=None, on_stderr=None, on_result=None,
                 on_error=None, envs=None, timeout=None):
        lang = str(language or "python").lower()
        out, err = [], []

        def so(d):
            out.append(d)
            if on_stdout:
                on_stdout(d)

        def se(d):
            err.append(d)
            if on_stderr:
                on_stderr(d)

        s = self._session
        text = None
        if lang in ("python", "python3", "py"):
            sent, nonce = self._with_result(code)
            if envs:
                self._set_env({str(k): str(v) for k, v in envs.items()}, keep_old=True)
            try:
                res = s.run(sent, timeout=timeout, on_stdout=so, on_stderr=se)
            finally:
                if envs:
                    self._set_env(envs, restore=True)
            if nonce and res.exit_code == 0:
                text = self._read_result(nonce)
        else:
            if self._envs or envs:
                raise SandboxError("run_code(language=%r): sandcell gives envs to commands and to python "
                                   "code only (a %s run takes no environment)" % (language, lang))
            res = s._run_as(lang, code, None, timeout, so, se)
        self._count += 1
        results = [Result(png=p.content_base64) for p in getattr(res, "plots", [])]
        if text is not None:
            results.append(Result(text=text, is_main_result=True))
        ex = Execution(results=results, logs=Logs(stdout=out, stderr=err), execution_count=self._count)
        if res.exit_code != 0:
            ex.error = _error_of(res.stderr)
        for r in results:
            if on_result:
                on_result(r)
        if ex.error is not None and on_error:
            on_error(ex.error)
        return ex

    def kill(self):
        if self._timer is not None:
            self._timer.cancel()
        self._session.close()
        return True

    def close(self):
        self.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False
