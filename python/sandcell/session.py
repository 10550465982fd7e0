"""llm-sandbox's session API over sandcell cells.

A session is one cell (POST /cells) of a sandcell server: files stay in it
between calls; run() writes the code into the work directory and runs it
there (POST /cells/{id}/run, streamed when on_stdout/on_stderr are given);
InteractiveSandboxSession keeps a Python interpreter (POST /cells/{id}/code)."""

import ast
import base64
import copy
import io
import os
import posixpath
import re
import stat
import tarfile
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, List, Optional

from . import _client
from .exceptions import (CommandEmptyError, ForkError, LanguageNotSupportedError, LanguageNotSupportPlotError,
                         LibraryInstallationNotSupportedError, NotOpenSessionError, SandboxError,
                         SandboxTimeoutError, SecurityError, UnsupportedBackendError)
from .security import check as _check_policy

DEFAULT_TIMEOUT = 30.0
HTTP_SLACK = 300.0  # seconds the HTTP wait adds to a run's own timeouts (a bound, not a delay)

# runtime_configs keys sandcell maps onto its limits; others are ignored
_KNOWN_CONFIGS = {"mem_limit", "memory", "cpu_quota", "cpu_period", "nano_cpus", "cpus",
                  "pids_limit", "network_mode", "allow_net"}
# llm-sandbox (Docker/Kubernetes/Podman) arguments that mean nothing here
_QUIET = {"client", "dockerfile", "commit_container", "stream", "container_configs",
          "session_timeout", "container_id", "skip_environment_setup", "pod_manifest",
          "kube_namespace", "env_vars", "mount", "mounts", "use_default_runtime_configs"}


@dataclass
class ConsoleOutput:
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""

    def success(self):
        return self.exit_code == 0

    @property
    def text(self):
        return self.stdout

    def to_json(self, include_plots=False):
        return {"exit_code": self.exit_code, "stdout": self.stdout, "stderr": self.stderr}


class FileType(str, Enum):
    """llm-sandbox's FileType: plot.format.value is the string, and
    plot.format == "png" holds as well (a str)."""
    PNG = "png"
    JPEG = "jpeg"
    PDF = "pdf"
    SVG = "svg"
    CSV = "csv"
    JSON = "json"
    TXT = "txt"
    HTML = "html"

    __str__ = str.__str__
    __format__ = str.__format__


def _file_type(name):
    try:
        return FileType(str(name).lower())
    except ValueError:
        return name


class SandboxBackend(str, Enum):
    """llm-sandbox's backends. sandcell's cells stand in for a container:
    DOCKER (llm-sandbox's default), PODMAN and SANDCELL run here; the
    others raise UnsupportedBackendError."""
    DOCKER = "docker"
    KUBERNETES = "kubernetes"
    PODMAN = "podman"
    MICROMAMBA = "micromamba"
    SANDCELL = "sandcell"

    __str__ = str.__str__
    __format__ = str.__format__


_BACKENDS_RUN_HERE = {SandboxBackend.DOCKER, SandboxBackend.PODMAN, SandboxBackend.SANDCELL}


def _check_backend(backend):
    if backend is None:
        return
    name = str(getattr(backend, "value", backend)).lower()
    try:
        b = SandboxBackend(name)
    except ValueError:
        b = None
    if b not in _BACKENDS_RUN_HERE:
        raise UnsupportedBackendError(
            "backend %r is not supported by sandcell: its cells stand in for docker and podman "
            "containers (backend=SandboxBackend.DOCKER, PODMAN or SANDCELL, or leave it out)" % name)


@dataclass
class PlotOutput:
    format: str
    content_base64: str
    width: Optional[int] = None
    height: Optional[int] = None
    dpi: Optional[int] = None

    @property
    def content(self):
        return base64.b64decode(self.content_base64)


@dataclass
class ExecutionResult(ConsoleOutput):
    plots: List[PlotOutput] = field(default_factory=list)

    def to_json(self, include_plots=False):
        d = super().to_json()
        if include_plots:
            d["plots"] = [{"format": p.format, "content_base64": p.content_base64} for p in self.plots]
        return d


def _png_size(data):
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None, None


def _plots_of(result):
    out = []
    for p in result.get("plots") or []:
        b64 = p.get("content_base64", "")
        try:
            w, h = _png_size(base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4)))
        except ValueError:
            w = h = None
        out.append(PlotOutput(format=_file_type(p.get("format", "png")), content_base64=b64, width=w,
                              height=h))
    return out


def check_cell_path(path, what="path"):
    """A cell path must not hold a '..' component (llm-sandbox: SecurityError)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise SecurityError("%s: expected a non-empty string without NUL" % what)
    if ".." in path.split("/"):
        raise SecurityError("%s %r: '..' is not allowed in a cell path" % (what, path))
    return path


def _size_mb(v):
    """Docker's mem_limit ("512m", "1g", bytes) in MiB."""
    if isinstance(v, (int, float)):
        return float(v) / (1 << 20)
    s = str(v).strip().lower().rstrip("b")
    mult = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}
    if s and s[-1] in mult:
        return float(s[:-1]) * mult[s[-1]]
    return float(s) / (1 << 20)


def _server_args(image, rc, warn):
    """The serve options a session's image and runtime_configs need."""
    args = []
    if image:
        args += ["--image", image]
    cpus = None
    if rc.get("cpu_quota") is not None:
        period = rc.get("cpu_period") or 100000
        cpus = float(rc["cpu_quota"]) / float(period)
    elif rc.get("nano_cpus") is not None:
        cpus = float(rc["nano_cpus"]) / 1e9
    elif rc.get("cpus") is not None:
        cpus = float(rc["cpus"])
    if cpus is not None and cpus > 0:
        args += ["--cpus", "%g" % cpus]
    if rc.get("pids_limit") is not None and int(rc["pids_limit"]) > 0:
        args += ["--pids", str(int(rc["pids_limit"]))]
    nm = rc.get("network_mode")
    allow = rc.get("allow_net") or []
    if isinstance(allow, str):
        allow = [allow]
    if nm not in (None, "none") and not allow:
        warn("network_mode=%r: sandcell cells have no network but loopback unless given an "
             "egress allowlist (runtime_configs={'allow_net': ['pypi.org', ...]})" % nm)
    for a in allow:
        args += ["--allow-net", a]
    for k in rc:
        if k not in _KNOWN_CONFIGS:
            warn("runtime_configs[%r] is ignored by sandcell" % k)
    return args


class SandboxSession:
    """llm-sandbox's SandboxSession: one cell, files kept between calls."""

    _plots_allowed = False

    def __init__(self, lang="python", image=None, libraries=None, workdir="/sandbox",
                 runtime_configs=None, default_timeout=None, execution_timeout=None,
                 keep_template=False, verbose=False, security_policy=None, **kwargs):
        self.lang = str(getattr(lang, "value", lang)).lower()
        self.image = image
        self.libraries = list(libraries or [])
        self.workdir = check_cell_path(workdir, "workdir")
        self.runtime_configs = dict(runtime_configs or {})
        self.default_timeout = default_timeout
        self.execution_timeout = execution_timeout
        self.keep_template = keep_template
        self.verbose = verbose
        self.security_policy = security_policy
        self.backend = kwargs.pop("backend", None)
        _check_backend(self.backend)
        for k, v in kwargs.items():
            if not (k in _QUIET and v in (None, False, "docker", "DOCKER")):
                self._warn("argument %r is ignored by sandcell" % k)
        self._client = None
        self.cell_id = None
        self._workdir_ready = False
        self._lock = threading.Lock()

    # -- helpers --
    def _warn(self, msg):
        warnings.warn("sandcell: " + msg, stacklevel=3)

    def _need_open(self):
        if not self.cell_id:
            raise NotOpenSessionError()

    def _timeout(self, t):
        for v in (t, self.execution_timeout, self.default_timeout):
            if v is not None:
                return float(v)
        return DEFAULT_TIMEOUT

    @property
    def is_open(self):
        return self.cell_id is not None

    # -- lifecycle --
    def open(self):
        if self.cell_id:
            return self
        rc = self.runtime_configs
        args = _server_args(self.image, rc, self._warn)
        self._client = _client.default_client(args, self._warn)
        body = {}
        mem = rc.get("mem_limit", rc.get("memory"))
        if mem is not None:
            body["memory_limit_MB"] = _size_mb(mem)
        if self.image:
            body["image"] = self.image
        got = self._client.json("POST", "/cells", body, timeout=HTTP_SLACK)
        self.cell_id = got["id"]
        self._workdir_ready = False  # made by the first run, or on demand
        try:
            if self.libraries:
                self.install(self.libraries)
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        cid, self.cell_id = self.cell_id, None
        if cid and self._client:
            try:
                self._client.json("DELETE", "/cells/" + cid, timeout=HTTP_SLACK, ok=(200, 404))
            except SandboxError:
                pass

    def fork(self, n=1, replay_sessions=False):
        """n (1..100) new sessions whose cells' files equal this one's at one
        instant (the server's POST /cells/{id}/fork). This cell keeps running;
        the children start with fresh processes: no kept interpreter state of
        this session is copied, only files; with replay_sessions, a child's
        kept Python interpreter runs this one's code again, in order. Raises
        ForkError (with the children that were made) when some could not be
        made or their replay failed."""
        self._need_open()
        n = int(n)
        if not 1 <= n <= 100:
            raise ValueError("fork(n): n must be 1 to 100")
        body = {"count": n}
        if replay_sessions:
            body["replay_sessions"] = True
        got = self._client.json("POST", "/cells/%s/fork" % self.cell_id, body,
                                timeout=HTTP_SLACK + (600.0 if replay_sessions else 10.0) * n)
        children, errors = [], []
        for entry in got.get("cells", [])[:n]:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                children.append(self._child(entry["id"]))
                replay = entry.get("replay")
                if isinstance(replay, dict) and replay.get("ok") is False:
                    errors.append("%s: replay: %s" % (entry["id"], str(replay.get("error"))[:300]))
            else:
                errors.append(str(entry.get("error", entry) if isinstance(entry, dict) else entry)[:300])
        if len(children) + len(errors) < n:
            errors.append("the server answered %d entries for %d children"
                          % (len(children) + len(errors), n))
        if errors:
            raise ForkError(children, errors)
        return children

    def _child(self, cell_id):
        """A session of the same kind and settings on cell cell_id."""
        child = copy.copy(self)
        child._lock = threading.Lock()
        child.cell_id = cell_id
        child._fresh_child()
        return child

    def _fresh_child(self):
        """What a child of fork must not share with its parent (subclasses)."""

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            if self.cell_id:
                self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass

    # -- code --
    def is_safe(self, code):
        """(is_safe, violations) under security_policy (advisory: the cell is the boundary)."""
        return _check_policy(self.security_policy, code, self.lang)

    def _refuse_unsafe(self, code):
        if self.security_policy is not None:
            safe, violations = self.is_safe(code)
            if not safe:
                raise SecurityError("the code is refused by the security policy: " +
                                    "; ".join(v.description for v in violations))

    def _run_body(self, code, libraries, timeout, lang=None):
        t = self._timeout(timeout)
        body = {"code": code, "language": lang or self.lang, "timeout": t, "compile_timeout": max(t, 30.0),
                "workdir": self.workdir}
        if libraries:
            body["libraries"] = list(libraries)
        return body, t

    def _post_code(self, route, body, http_timeout, on_stdout, on_stderr):
        """The lang result of /run or /code, streamed when a callback is given."""
        path = "/cells/%s/%s" % (self.cell_id, route)
        if not (on_stdout or on_stderr):
            return self._client.json("POST", path, body, timeout=http_timeout)
        result = None
        for ev in self._client.stream(path, body, http_timeout):
            kind = ev.get("type")
            if kind == "stdout" and on_stdout:
                on_stdout(ev.get("data", ""))
            elif kind == "stderr" and on_stderr:
                on_stderr(ev.get("data", ""))
            elif kind == "result":
                result = ev
            elif kind == "error":
                raise SandboxError(ev.get("detail", "the run failed"))
        if result is None:
            raise SandboxError("the stream ended without a result")
        return result

    @staticmethod
    def _console(result, cls=ConsoleOutput, **extra):
        if result.get("status") == "SandboxError":
            raise SandboxError(result.get("message") or "sandcell could not run the code")
        comp, run = result.get("compile_result"), result.get("run_result")
        for step in (comp, run):
            if step and step.get("status") == "TimeLimitExceeded":
                raise SandboxTimeoutError("the code ran past its timeout of %.3g s" % step.get("execution_time", 0))
        if run is None:  # the compile failed
            step = comp or {}
            return cls(exit_code=step.get("return_code", 1) or 1, stdout=step.get("stdout", ""),
                       stderr=step.get("stderr", ""), **extra)
        return cls(exit_code=run.get("return_code", 0), stdout=run.get("stdout", ""),
                   stderr=run.get("stderr", ""), **extra)

    def run(self, code, libraries=None, timeout=None, on_stdout=None, on_stderr=None):
        """Run code (a fresh process of the language in the work directory)."""
        return self._run_as(None, code, libraries, timeout, on_stdout, on_stderr)

    def _run_as(self, lang, code, libraries, timeout, on_stdout, on_stderr):
        self._need_open()
        self._refuse_unsafe(code)
        body, t = self._run_body(code, libraries, timeout, lang)
        res = self._post_code("run", body, 2 * t + HTTP_SLACK, on_stdout, on_stderr)
        if res.get("status") != "SandboxError":
            self._workdir_ready = True  # the source was written there
        return self._console(res)

    def _ensure_workdir(self):
        if not self._workdir_ready:
            self._exec({"argv": ["mkdir", "-p", self.workdir], "cwd": "/", "timeout": 30})
            self._workdir_ready = True

    def install(self, libraries=None):
        """Install libraries with the language's tool (pip, npm, gem)."""
        self._need_open()
        libs = list(libraries or [])
        if not libs:
            return
        if self.lang not in ("python", "javascript", "ruby"):
            raise LibraryInstallationNotSupportedError("sandcell installs libraries for python, "
                                                       "javascript and ruby, not %s" % self.lang)
        body, _ = self._run_body("", libs, 300)
        res = self._client.json("POST", "/cells/%s/run" % self.cell_id, body, timeout=600 + HTTP_SLACK)
        self._workdir_ready = True
        if res.get("status") == "SandboxError":
            raise SandboxError(res.get("message") or "installing %s failed" % libs)

    # -- commands --
    def _exec(self, body, on_stdout=None, on_stderr=None):
        t = float(body.get("timeout", DEFAULT_TIMEOUT))
        path = "/cells/%s/exec" % self.cell_id
        if not (on_stdout or on_stderr):
            return self._client.json("POST", path, body, timeout=t + HTTP_SLACK)
        out, err, result = [], [], None
        for ev in self._client.stream(path, body, t + HTTP_SLACK):
            kind = ev.get("type")
            if kind == "stdout":
                out.append(ev.get("data", ""))
                if on_stdout:
                    on_stdout(ev.get("data", ""))
            elif kind == "stderr":
                err.append(ev.get("data", ""))
                if on_stderr:
                    on_stderr(ev.get("data", ""))
            elif kind == "result":
                result = ev
            elif kind == "error":
                raise SandboxError(ev.get("detail", "the command could not run"))
        if result is None:
            raise SandboxError("the stream ended without a result")
        result["stdout"], result["stderr"] = "".join(out), "".join(err)
        return result

    def execute_command(self, command, workdir=None, timeout=None, on_stdout=None, on_stderr=None,
                        env=None):
        """Run a shell command (/bin/sh -c) in the cell."""
        if not command:
            raise CommandEmptyError("empty command")
        self._need_open()
        cwd = check_cell_path(workdir or self.workdir, "workdir")
        if cwd == self.workdir:
            self._ensure_workdir()
        body = {"cmd": command, "cwd": cwd, "timeout": self._timeout(timeout)}
        if env:
            body["env"] = dict(env)
        got = self._exec(body, on_stdout, on_stderr)
        if got.get("timed_out"):
            raise SandboxTimeoutError("the command ran past its timeout: %s" % command[:200])
        return ConsoleOutput(exit_code=got.get("exit_code", 0), stdout=got.get("stdout", ""),
                             stderr=got.get("stderr", ""))

    def execute_commands(self, commands, workdir=None):
        """Run commands in order (each a string or (command, workdir)); stops
        at the first that fails and returns its output, else the last one's."""
        out = ConsoleOutput()
        for c in commands:
            cmd, wd = (c[0], c[1]) if isinstance(c, (tuple, list)) else (c, workdir)
            out = self.execute_command(cmd, workdir=wd or workdir)
            if out.exit_code != 0:
                break
        return out

    # -- files --
    def _cell_dest(self, path):
        check_cell_path(path)
        return path if path.startswith("/") else posixpath.join(self.workdir, path)

    def copy_to_runtime(self, src, dest):
        """Copy a host file or directory into the cell at dest."""
        self._need_open()
        dest = self._cell_dest(dest)
        p = Path(src)
        if not (p.is_file() or p.is_dir()):
            raise FileNotFoundError("source path %s does not exist or is not a file or directory" % src)
        q = "/cells/%s/files?path=%s" % (self.cell_id, _quote(dest))
        if p.is_file():
            if p.stat().st_size >= _client.MAX_FILE:
                raise SandboxError("%s: larger than the server's 16 MiB file limit (copy its directory)" % src)
            data = p.read_bytes()
            st, _, body = self._client.call("PUT", q, data, timeout=HTTP_SLACK)
        else:
            # as llm-sandbox (docker cp into a made directory): dest and its
            # parents are made when missing
            made = self._exec({"argv": ["mkdir", "-p", "--", dest], "cwd": "/", "timeout": 30})
            if made.get("exit_code") != 0:
                raise SandboxError("copying %s into the cell: mkdir -p %s: %s"
                                   % (src, dest, (made.get("stderr") or "").strip()[:300]))
            with tempfile.TemporaryFile() as f:
                with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    for child in sorted(p.iterdir()):
                        tar.add(str(child), arcname=child.name)
                f.seek(0)
                st, _, body = self._client.call("PUT", q, f, {"Content-Type": "application/x-tar",
                                                              "Content-Length": str(os.fstat(f.fileno()).st_size)},
                                                timeout=HTTP_SLACK)
        if st != 200:
            raise SandboxError("copying %s into the cell: HTTP %d %s" % (src, st, body[:300].decode(errors="replace")))

    def copy_from_runtime(self, src, dest):
        """Copy a file or directory of the cell to dest on the host."""
        self._need_open()
        src = self._cell_dest(src)
        q = "/cells/%s/files?path=%s" % (self.cell_id, _quote(src))
        c, r = self._client.open("GET", q, timeout=HTTP_SLACK)
        try:
            if r.status == 404:
                raise FileNotFoundError("file %s not found in the cell" % src)
            if r.status != 200:
                raise SandboxError("copying %s out of the cell: HTTP %d %s"
                                   % (src, r.status, r.read(300).decode(errors="replace")))
            if (r.getheader("Content-Type") or "").startswith("application/x-tar"):
                with tempfile.TemporaryFile() as f:
                    _copy_bounded(r, f, _client.MAX_TAR)
                    f.seek(0)
                    _extract_tar(f, dest)
            else:
                data = _client._read_bounded(r, _client.MAX_FILE, src)
                d = Path(dest)
                if d.is_dir():
                    d = d / posixpath.basename(src.rstrip("/"))
                d.parent.mkdir(parents=True, exist_ok=True)
                d.write_bytes(data)
        finally:
            c.close()


def _quote(p):
    import urllib.parse
    return urllib.parse.quote(p, safe="/")


def _copy_bounded(r, f, limit):
    n = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            return
        n += len(b)
        if n > limit:
            raise SandboxError("the server sent more than %d bytes" % limit)
        f.write(b)


def _extract_tar(f, dest):
    """Regular files and directories only, names checked (no absolute name,
    no '..'); links, devices and FIFOs are left out."""
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=f, mode="r:") as tar:
        for m in tar:
            parts = [x for x in m.name.split("/") if x not in ("", ".")]
            if m.name.startswith("/") or ".." in parts or (not parts and not m.isdir()):
                continue
            target = root.joinpath(*parts) if parts else root
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif m.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(m)
                fd = os.open(str(target), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                             stat.S_IMODE(m.mode) & 0o755 | 0o600)
                with os.fdopen(fd, "wb") as out:
                    while True:
                        b = src.read(1 << 20)
                        if not b:
                            break
                        out.write(b)


# the languages whose runs the server brings plots back from (and their
# names there): python's matplotlib and plotly, R's default graphics device
_PLOT_LANGS = {"python", "python3", "py", "r", "rscript"}


class ArtifactSandboxSession(SandboxSession):
    """A session whose run() also returns plots (python's matplotlib and
    plotly, R's graphics): the plots accumulate over the session's runs
    until run(..., clear_plots=True)."""

    def __init__(self, lang="python", enable_plotting=True, **kwargs):
        super().__init__(lang=lang, **kwargs)
        self.enable_plotting = enable_plotting
        if enable_plotting and self.lang not in _PLOT_LANGS:
            raise LanguageNotSupportPlotError("sandcell captures plots for python and r only, not %s"
                                              % self.lang)
        self._plots = []

    def run(self, code, libraries=None, timeout=None, clear_plots=False, on_stdout=None, on_stderr=None):
        self._need_open()
        self._refuse_unsafe(code)
        if clear_plots:
            self._plots = []
        body, t = self._run_body(code, libraries, timeout)
        res = self._post_code("run", body, 2 * t + HTTP_SLACK, on_stdout, on_stderr)
        if res.get("status") != "SandboxError":
            self._workdir_ready = True
        if self.enable_plotting:
            self._plots.extend(_plots_of(res))
        return self._console(res, ExecutionResult, plots=list(self._plots))

    def clear_plots(self):
        self._plots = []

    def _fresh_child(self):
        self._plots = list(self._plots)  # the parent's so far, not shared


# a line of IPython syntax: a line or cell magic, or a shell escape
_MAGIC_LINE = re.compile(r"^[ \t]*(%%?[A-Za-z_]\w*|!)", re.M)


def _magics_of(code):
    """The IPython magics (%name, %%name, !) of code that Python cannot
    parse; [] for code that is Python."""
    try:
        ast.parse(code)
        return []
    except (SyntaxError, ValueError):
        pass
    return [m.group(1) for m in _MAGIC_LINE.finditer(code)]


class InteractiveSandboxSession(SandboxSession):
    """Python whose state (variables, imports) lives across run() calls.
    The cell's IPython runs the code when the cell's python has it (magics
    and all); without it, code with magics fails with a message that says so."""

    def __init__(self, lang="python", **kwargs):
        kwargs.pop("kernel_type", None)
        super().__init__(lang=lang, **kwargs)
        if self.lang != "python":
            raise LanguageNotSupportedError("sandcell keeps interpreter state for python only, not %s" % self.lang)
        self._ipython = None

    def _has_ipython(self):
        """Does IPython run this session's code (its namespace has get_ipython)?"""
        if self._ipython is None:
            probe = "print('sandcell-ipython=%d' % ('get_ipython' in globals()))"
            res = self._post_code("code", {"code": probe, "timeout": 60}, 60 + 2 * HTTP_SLACK, None, None)
            self._ipython = "sandcell-ipython=1" in self._console(res).stdout
        return self._ipython

    def _no_ipython(self, magics):
        names = ", ".join(sorted(set(magics)))
        return ExecutionResult(
            exit_code=1, stderr="UsageError: %s: IPython magics and shell escapes need IPython, and the "
            "cell's python has none (the session runs plain Python): install ipython into the "
            "image, or write it in Python (subprocess for !, install() for %%pip)\n" % names)

    def open(self):
        if self.cell_id:
            return self
        super().open()
        try:  # starts the interpreter now, in the work directory
            body = {"code": "import os as _sc_os\n_sc_os.makedirs(%r, exist_ok=True)\n_sc_os.chdir(%r)\n"
                            "del _sc_os" % (self.workdir, self.workdir), "timeout": 60}
            self._console(self._post_code("code", body, 60 + 2 * HTTP_SLACK, None, None))
            self._workdir_ready = True
        except BaseException:
            self.close()
            raise
        return self

    def run(self, code, libraries=None, timeout=None, on_stdout=None, on_stderr=None, clear_plots=True):
        """Run code in the kept interpreter; plots of this call come back."""
        self._need_open()
        self._refuse_unsafe(code)
        magics = _magics_of(code)
        if magics and not self._has_ipython():
            res = self._no_ipython(magics)
            if on_stderr:
                on_stderr(res.stderr)
            return res
        t = self._timeout(timeout)
        body = {"code": code, "timeout": t, "clear_plots": bool(clear_plots)}
        if libraries:
            body["libraries"] = list(libraries)
        res = self._post_code("code", body, t + 2 * HTTP_SLACK, on_stdout, on_stderr)
        return self._console(res, ExecutionResult, plots=_plots_of(res))
