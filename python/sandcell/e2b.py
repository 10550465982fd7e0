"""An E2B-style facade (e2b_code_interpreter's shapes) over one cell:
run_code in a kept Python interpreter (other languages: a fresh process),
commands.run, files.read/write/list, kill."""

import re
from dataclasses import dataclass, field
from typing import List, Optional

from .exceptions import CommandExitException, SandboxTimeoutError
from .session import InteractiveSandboxSession, check_cell_path


@dataclass
class Result:
    """One result of run_code: here a plot (png) - the value of a last
    expression is not captured (print it: it is in logs.stdout)."""
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


class Commands:
    def __init__(self, sbx):
        self._sbx = sbx

    def run(self, cmd, timeout=60, on_stdout=None, on_stderr=None, envs=None, cwd=None, background=False):
        if background:
            raise NotImplementedError("sandcell runs commands in the foreground only")
        s = self._sbx._session
        try:
            out = s.execute_command(cmd, workdir=cwd, timeout=timeout, on_stdout=on_stdout,
                                    on_stderr=on_stderr, env=envs)
        except SandboxTimeoutError:
            raise
        if out.exit_code != 0:
            raise CommandExitException(out.stdout, out.stderr, out.exit_code)
        return CommandResult(stdout=out.stdout, stderr=out.stderr, exit_code=0)


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


class Sandbox:
    """Sandbox.create() -> a cell with a kept Python interpreter."""

    def __init__(self, template=None, timeout=300, envs=None, workdir="/home/user", **kwargs):
        self._session = InteractiveSandboxSession(lang="python", image=template, workdir=workdir,
                                                  default_timeout=60, **kwargs)
        self._session.open()
        self.commands = Commands(self)
        self.files = Files(self)
        self._count = 0

    @classmethod
    def create(cls, template=None, timeout=300, **kwargs):
        return cls(template=template, timeout=timeout, **kwargs)

    @property
    def sandbox_id(self):
        return self._session.cell_id

    def is_running(self):
        return self._session.is_open

    def run_code(self, code, language="python", on_stdout=None, on_stderr=None, timeout=None, envs=None):
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
        if lang in ("python", "python3", "py"):
            res = s.run(code, timeout=timeout, on_stdout=so, on_stderr=se)
        else:
            res = s._run_as(lang, code, None, timeout, so, se)
        self._count += 1
        results = [Result(png=p.content_base64) for p in getattr(res, "plots", [])]
        ex = Execution(results=results, logs=Logs(stdout=out, stderr=err), execution_count=self._count)
        if res.exit_code != 0:
            ex.error = _error_of(res.stderr)
        return ex

    def kill(self):
        self._session.close()
        return True

    def close(self):
        self.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

