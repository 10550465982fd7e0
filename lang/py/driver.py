# sandcell: a kept Python session inside a cell. Standard library only;
# written into the cell by lang/ (lang_session_*), never run on the host.
#
#   driver.py serve DIR      the supervisor: holds the socket DIR/s.sock,
#                            forks the interpreter (the worker) and forks a
#                            fresh one when it dies, writing why into
#                            DIR/died-PID (DIR: the session's own directory,
#                            named by the host's secret key; client.py)
#
# The client (lang/py/client.py, exec'd for each run) connects, passes its
# stdout and stderr and the code; the worker runs it and answers. The
# driver's messages are "key=integer" lines, length first (the client
# parses them without json). Everything here is inside the cell.
import fcntl
import importlib
import os
import select
import signal
import socket
import struct
import sys
import time

# the worker's modules, imported there: the client starts faster without
ast = linecache = threading = traceback = None

D = os.environ.get("SANDCELL_SESSION_DIR", "/tmp/.sandcell/session")
K = None  # the session's own directory (argv)
PLOTS = os.path.join(D, "plots")
MAX_SRC = 4 << 20
# every run's code and exit code, in order, for a fork's replay
# (lang_session_replay): "LENGTH EXIT\n" CODE "\n" each, then "full\n"
# once it would pass HISTORY_MAX bytes (nothing more is kept then)
HISTORY = os.path.join(D, "history")
HISTORY_MAX = 16 << 20
FLAG_CLEAR = 1
GRACE = 5.0  # seconds a run has to stop after SIGINT (as client.py's)


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        chunk = s.recv(min(n - len(b), 1 << 16))
        if not chunk:
            raise EOFError
        b += chunk
    return bytes(b)


def send_msg(s, obj):
    data = "".join("%s=%d\n" % (k, int(v)) for k, v in obj.items()).encode("ascii")
    s.sendall(struct.pack("!I", len(data)) + data)


def clear_plots():
    try:
        names = os.listdir(PLOTS)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith("plot-"):
            try:
                os.unlink(os.path.join(PLOTS, name))
            except OSError:
                pass


# ---- the worker: the kept interpreter ----

class Session:
    def __init__(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.count = 0

    def run(self, code):
        """Run code as a notebook cell; returns (exit code, interrupted)."""
        self.count += 1
        n = self.count
        fname = "<cell-%d>" % n
        linecache.cache[fname] = (len(code), None, code.splitlines(True), fname)
        importlib.invalidate_caches()  # libraries installed since the last run
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            try:
                tree = ast.parse(code, fname, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                exec(compile(tree, fname, "exec"), self.ns)
                if last is not None:
                    value = eval(compile(last, fname, "eval"), self.ns)
                    if value is not None:
                        self.ns["_"] = value
                        print("Out[%d]: %r" % (n, value))
                return 0, False
            finally:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        except KeyboardInterrupt:
            print("KeyboardInterrupt: interrupted", file=sys.stderr)
            return 130, True
        except SystemExit as e:
            if e.code is None:
                return 0, False
            if isinstance(e.code, int):
                return e.code & 255, False
            print(e.code, file=sys.stderr)
            return 1, False
        except BaseException:
            et, ev, tb = sys.exc_info()
            # leave out this driver's own frame
            traceback.print_exception(et, ev, tb.tb_next if tb is not None else None)
            return 1, False


class IPythonSession:
    """The same cells run by IPython's InteractiveShell (the image has
    IPython): magics, its Out[N] display and tracebacks (to stderr, no
    colours); no history file."""

    def __init__(self, shell_cls, config_cls):
        os.environ.setdefault("IPYTHONDIR", os.path.join(D, "ipython"))
        cfg = config_cls()
        cfg.HistoryManager.enabled = False
        cfg.InteractiveShell.colors = "NoColor"
        cfg.InteractiveShell.separate_in = ""
        self.sh = shell_cls.instance(config=cfg)
        sh = self.sh

        def to_stderr(etype, evalue, stb):
            # sys.exit() ends the run with its status, as in `python3
            # main.py`: no "An exception has occurred" note
            if isinstance(etype, type) and issubclass(etype, SystemExit):
                return
            print(sh.InteractiveTB.stb2text(stb), file=sys.stderr)

        import warnings
        warnings.filterwarnings("ignore", message="To exit: use 'exit'", category=UserWarning)

        sh._showtraceback = to_stderr
        self.count = 0

    def run(self, code):
        importlib.invalidate_caches()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            try:
                r = self.sh.run_cell(code, store_history=True)
            finally:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                self.count = self.sh.execution_count - 1
        except KeyboardInterrupt:
            print("KeyboardInterrupt: interrupted", file=sys.stderr)
            return 130, True
        err = r.error_before_exec or r.error_in_exec
        if err is None:
            return 0, False
        if isinstance(err, KeyboardInterrupt):
            return 130, True
        if isinstance(err, SystemExit):
            if err.code is None:
                return 0, False
            return (err.code & 255, False) if isinstance(err.code, int) else (1, False)
        return 1, False


def new_session():
    """IPython's InteractiveShell when it imports, else the stdlib Session."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
        return IPythonSession(InteractiveShell, Config)
    except Exception:
        return Session()


def plots_flush():
    m = sys.modules.get("sc_backend")
    if m is not None:
        try:
            m.flush(close=True)
        except Exception:
            traceback.print_exc()


def watch_client(connfd, done_r):
    """While a run goes on: a client that goes away (its command was
    cancelled, or it was killed) interrupts the run as its timeout would,
    and the worker is killed GRACE seconds later if the code does not stop
    (the supervisor starts a fresh one). done_r reads EOF when the run ends."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the client's go to the main thread
    p = select.poll()
    p.register(connfd, select.POLLRDHUP)
    p.register(done_r, select.POLLIN)
    while True:
        ready = dict(p.poll())
        if done_r in ready:
            return
        if ready.get(connfd, 0) & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
            break
        time.sleep(0.05)  # data from a client that sends none: not a hangup
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    if not select.select([done_r], [], [], GRACE)[0]:
        os.kill(os.getpid(), signal.SIGKILL)


def record(code, rc):
    data = code.encode("utf-8", "replace")
    try:
        fd = os.open(HISTORY, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        rec = b"%d %d\n" % (len(data), rc) + data + b"\n"
        if size + len(rec) <= HISTORY_MAX:
            os.write(fd, rec)
        elif size < 5 or os.pread(fd, 5, size - 5) != b"full\n":
            os.write(fd, b"full\n")
    except OSError:
        pass
    finally:
        os.close(fd)


def serve_one(conn, sess, devnull):
    conn.settimeout(30)
    send_msg(conn, {"pid": os.getpid()})
    msg, fds, _, _ = socket.recv_fds(conn, 8, 2)
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return
    try:
        if len(msg) < 8:
            msg += recv_exact(conn, 8 - len(msg))
        length, flags = struct.unpack("!II", msg)
        if length > MAX_SRC:
            return
        code = recv_exact(conn, length).decode("utf-8", "replace")
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
    finally:
        for fd in fds:
            os.close(fd)
    done_r, done_w = os.pipe()
    watcher = threading.Thread(target=watch_client, args=(conn.fileno(), done_r), daemon=True)
    watcher.start()
    try:
        if flags & FLAG_CLEAR:
            clear_plots()
        try:
            rc, interrupted = sess.run(code)
            record(code, rc)
        finally:
            os.close(done_w)
            watcher.join()
            os.close(done_r)
        plots_flush()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    conn.settimeout(30)
    send_msg(conn, {"exit": rc, "interrupted": interrupted, "count": sess.count})


def worker(lsock):
    global ast, linecache, threading, traceback
    import ast
    import linecache
    import threading
    import traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # die with the supervisor (Linux prctl PR_SET_PDEATHSIG)
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
        if os.getppid() == 1:
            os._exit(1)
    except Exception:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    sys.stdin = open(os.devnull)
    sess = new_session()
    while True:
        conn, _ = lsock.accept()
        try:
            serve_one(conn, sess, devnull)
        except (OSError, EOFError, ValueError, KeyboardInterrupt):
            pass
        finally:
            conn.close()


# ---- the supervisor ----

def describe(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return 128 + sig, "was killed by %s" % name
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
    return code, "exited with status %d" % code


def serve():
    sock = os.path.join(K, "s.sock")
    lockf = open(os.path.join(K, "lock"), "w")
    try:
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another supervisor runs
    for stale in (sock, sock + ".new"):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(sock + ".new")
    ls.listen(8)
    os.rename(sock + ".new", sock)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        pid = os.fork()
        if pid == 0:
            lockf.close()
            try:
                worker(ls)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        code, why = describe(status)
        with open(os.path.join(K, "died-%d" % pid), "w") as f:
            f.write("%d %s\n" % (code, why))
        time.sleep(0.05)


def main(argv):
    global K
    if len(argv) == 3 and argv[1] == "serve":
        K = argv[2]
        return serve()
    sys.stderr.write("usage: driver.py serve DIR (the client is client.py)\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
