# sandcell: a Python interpreter started ahead of a request (issue #39),
# in a pooled cell, by `python3 -u sc_zygote.py SOCKET [MODULE...]`: site
# is imported, the named modules too, then it waits on SOCKET (a unix
# SOCK_SEQPACKET socket). The cell's init (runtime/zygote.c) sends it a
# command `python3 -u SCRIPT ARGS...` with the command's environment,
# working directory and stdin/stdout/stderr; the command is run in a
# process cloned from this one with CLONE_PARENT, so that it is init's
# child as a fresh process would be (init waits for it, times it out,
# reports its status and resource use). What the command sees is what a
# fresh `python3 -u SCRIPT` would see: __main__ a new module named
# "__main__" with the script's __file__, sys.argv, sys.orig_argv and
# sys.path[0] the script's, sys.modules as at a fresh start plus the
# modules named here (and what they import), the environment and working
# directory given, tracebacks that begin at the script, the exit status of
# SystemExit, an uncaught exception (1) or a signal, random reseeded.
# A command that does not have that form, or whose environment differs in
# a variable read at interpreter start (PYTHON*, LANG, LC_*, HOME, PATH,
# TZ), is refused:
# init then starts it the usual way. Standard library only; written into
# the cell by lang/.
import sys

# a fresh script's __main__: its keys, in order
_MAIN_KEYS = [k for k in globals() if k.startswith("__")]


def _preimport(names):
    for name in names:
        try:
            __import__(name)
        except Exception:
            pass  # not in the image: the commands import it themselves


_preimport(sys.argv[2:])
_KEEP = set(sys.modules)

import ctypes  # noqa: E402
import importlib.machinery  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import types  # noqa: E402

_MAGIC = b"SCZ1"
_CLONE_PARENT = 0x8000
_MAX_MSG = 256 * 1024
# what the interpreter reads as it starts: its own variables, the locale
# (the streams' encoding), HOME (the user's site directory on sys.path),
# PATH (sys.executable) and TZ (time.tzname)
_STARTUP_PREFIXES = ("PYTHON", "LANG", "LC_")
_STARTUP_NAMES = ("HOME", "PATH", "TZ")


def _startup_env(env):
    return {k: v for k, v in env.items()
            if k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES}


def _parse(data):
    """SCZ1 \\0 argc \\0 argv... envc \\0 env... cwd \\0 -> (argv, env, cwd)."""
    fields = data.split(b"\0")
    if fields[0] != _MAGIC:
        raise ValueError("not a zygote request")
    argc = int(fields[1])
    argv = [f.decode("utf-8", "surrogateescape") for f in fields[2:2 + argc]]
    envc = int(fields[2 + argc])
    env = {}
    for f in fields[3 + argc:3 + argc + envc]:
        k, _, v = f.decode("utf-8", "surrogateescape").partition("=")
        env[k] = v
    cwd = fields[3 + argc + envc].decode("utf-8", "surrogateescape")
    return argv, env, cwd


def _refusal(argv, env, cwd):
    """Why this command cannot run here ("" when it can)."""
    if len(argv) < 3 or os.path.basename(argv[0]) != os.path.basename(sys.orig_argv[0]) \
            or argv[1] != "-u" or argv[2].startswith("-"):
        return "not python3 -u SCRIPT"
    if _startup_env(env) != _startup_env(os.environ):
        return "the environment differs in a variable read at start"
    if not os.path.isdir(cwd):
        return "no working directory"
    return ""


def _clone_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr = 56 if os.uname().machine == "x86_64" else 220
    pid = libc.syscall(nr, _CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        after = ctypes.pythonapi.PyOS_AfterFork_Child
        after.restype = None
        after()
    elif pid < 0:
        raise OSError(ctypes.get_errno(), "clone")
    return pid


def _serve(listener):
    """Answer commands until one is taken: then, in the process cloned for
    it, return (conn, argv, env, cwd, fds)."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        fds = []
        try:
            msg, anc, _, _ = conn.recvmsg(_MAX_MSG, socket.CMSG_SPACE(3 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += list(memoryview(data).cast("i"))
            argv, env, cwd = _parse(msg)
            why = _refusal(argv, env, cwd) or ("" if len(fds) == 3 else "no stdio")
            if why:
                conn.send(b"NO " + why.encode())
            else:
                pid = _clone_parent()
                if pid == 0:
                    listener.close()
                    return conn, argv, env, cwd, fds
                conn.send(b"PID %d" % pid)
        except Exception as e:
            try:
                conn.send(b"NO " + str(e).encode()[:200])
            except OSError:
                pass
        for fd in fds:
            os.close(fd)
        conn.close()


def _become(conn, argv, env, cwd, fds):
    """In the cloned process: wait for init's go, then take the command's
    stdio, session, directory, environment and arguments."""
    go = conn.recv(16)
    conn.close()
    if go != b"GO":
        os._exit(0)  # init gave up on us
    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.setsid()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    script = os.path.abspath(argv[2])  # as __file__ and tracebacks name it
    sys.argv = argv[2:]
    sys.orig_argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    for name in list(sys.modules):
        if name not in _KEEP:
            del sys.modules[name]
    if "random" in sys.modules:
        sys.modules["random"].seed()
    if env.get("SANDCELL_PLOTS") and "sitecustomize" in sys.modules:
        hook = getattr(sys.modules["sitecustomize"], "_PlotHook", None)
        if hook and not any(isinstance(f, hook) for f in sys.meta_path):
            sys.meta_path.insert(0, hook())
    return script


def _main_module(script):
    """A new __main__ with the keys a fresh script's has, in their order."""
    values = {"__name__": "__main__", "__doc__": None, "__package__": None,
              "__loader__": importlib.machinery.SourceFileLoader("__main__", script),
              "__spec__": None, "__annotations__": {}, "__builtins__": __builtins__,
              "__file__": script, "__cached__": None}
    mod = types.ModuleType("__main__")
    d = mod.__dict__
    d.clear()
    for k in _MAIN_KEYS:
        d[k] = values.get(k)
    sys.modules["__main__"] = mod
    return mod


def _run(script, mod):
    """The script as the interpreter runs one; its exit status, and whether
    it ended by an uncaught KeyboardInterrupt (then by SIGINT)."""
    try:
        with open(script, "rb") as f:
            source = f.read()
    except OSError as e:
        print("%s: can't open file %r: [Errno %d] %s" % (sys.orig_argv[0], script, e.errno,
                                                         e.strerror), file=sys.stderr)
        return 2, False
    try:
        code = compile(source, script, "exec")
        del source
        exec(code, mod.__dict__)
    except SystemExit as e:
        return _exit_status(e.code), False
    except BaseException as e:
        e.__traceback__ = e.__traceback__.tb_next  # from the script's frame on
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, e.__traceback__
        sys.excepthook(type(e), e, e.__traceback__)
        return 1, isinstance(e, KeyboardInterrupt)
    return 0, False


def _exit_status(code):
    """SystemExit's code as the interpreter makes it a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _flushed():
    ok = True
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            ok = False
    return ok


def _finish(status, sigint, mod):
    """What the interpreter's shutdown does that a program can see: its
    non-daemon threads joined, atexit's functions, the standard streams
    flushed (status 120 when that fails), the script's globals released
    (files it left open are flushed and closed, __del__ methods run),
    cycles collected. Then the exit, without tearing down the modules the
    process shares with the interpreter it was cloned from: that would
    copy every page of theirs first, three times slower than the run."""
    threading = sys.modules.get("threading")
    if threading is not None and hasattr(threading, "_shutdown"):
        threading._shutdown()
    import atexit
    atexit._run_exitfuncs()
    if not _flushed():
        status = 120
    for key in list(mod.__dict__):
        if not (key.startswith("__") and key.endswith("__")):
            mod.__dict__[key] = None
    import gc
    gc.collect()
    if not _flushed():
        status = 120
    if sigint:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


def _start():
    """Listen on the socket in a process of its own, in the background:
    the starter's exec ends once it listens (the pid the socket reports
    as its peer is then the listener's, which init checks it may end)."""
    path = sys.argv[1]
    ready_r, ready_w = os.pipe()
    if os.fork():
        os.close(ready_w)
        os._exit(0 if os.read(ready_r, 1) == b"y" else 1)
    os.close(ready_r)
    os.setsid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(64)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.write(ready_w, b"y")
    os.close(ready_w)
    import gc
    gc.freeze()  # what is here now is never collected: the clones copy less
    return _serve(listener)


_job = _start()
del _preimport, _start
_script = _become(*_job)
_main = _main_module(_script)
_finish(*_run(_script, _main), _main)
