# sandcell: a kept Python session inside a cell. Standard library only;
# written into the cell by lang/ (lang_session_*), never run on the host.
#
#   driver.py serve          the supervisor: holds the socket, forks the
#                            interpreter (the worker) and forks a fresh one
#                            when it dies, writing why into died-PID
#   driver.py start          start the supervisor (if not running), wait
#   driver.py run STATUS S C read code from stdin, run it in the worker
#                            with timeout S (0: none), C=1 clears the plots;
#                            write "key=value" lines to STATUS
#
# The client passes its own stdout and stderr to the worker (SCM_RIGHTS),
# so everything the code writes, subprocesses included, reaches the cell's
# exec pipes as it happens. Everything here is inside the cell.
import fcntl
import importlib
import json
import os
import signal
import socket
import struct
import sys
import time

# the worker's modules, imported there: the client starts faster without
ast = linecache = traceback = None

D = os.environ.get("SANDCELL_SESSION_DIR", "/tmp/.sandcell/session")
SOCK = os.path.join(D, "s.sock")
PLOTS = os.path.join(D, "plots")
MAX_SRC = 4 << 20
MAX_PLOTS = 64
GRACE = 5.0
FLAG_CLEAR = 1


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        chunk = s.recv(min(n - len(b), 1 << 16))
        if not chunk:
            raise EOFError
        b += chunk
    return bytes(b)


def send_msg(s, obj):
    data = json.dumps(obj).encode()
    s.sendall(struct.pack("!I", len(data)) + data)


def recv_msg(s):
    (n,) = struct.unpack("!I", recv_exact(s, 4))
    if n > 65536:
        raise ValueError("message too long")
    return json.loads(recv_exact(s, n))


def count_plots():
    n = 0
    while n < MAX_PLOTS and any(os.path.exists(os.path.join(PLOTS, "plot-%04d.%s" % (n + 1, f)))
                                for f in ("png", "html")):
        n += 1
    return n


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


def plots_flush():
    m = sys.modules.get("sc_backend")
    if m is not None:
        try:
            m.flush(close=True)
        except Exception:
            traceback.print_exc()


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
    try:
        if flags & FLAG_CLEAR:
            clear_plots()
        rc, interrupted = sess.run(code)
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
    global ast, linecache, traceback
    import ast
    import linecache
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
    sess = Session()
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
    os.makedirs(D, mode=0o700, exist_ok=True)
    lockf = open(os.path.join(D, "lock"), "w")
    try:
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another supervisor runs
    try:
        os.unlink(SOCK)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(SOCK + ".new")
    ls.listen(8)
    os.rename(SOCK + ".new", SOCK)
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
        with open(os.path.join(D, "died-%d" % pid), "w") as f:
            f.write("%d %s\n" % (code, why))
        time.sleep(0.05)


def connect(deadline):
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(SOCK)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def spawn_supervisor():
    import subprocess
    subprocess.Popen([sys.executable, "-u", os.path.abspath(__file__), "serve"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)


def open_session():
    """A connection to a worker (starting the supervisor when none runs)
    and the worker's pid."""
    try:
        s = connect(time.monotonic())
    except OSError:
        spawn_supervisor()
        s = connect(time.monotonic() + 60)
    s.settimeout(60)
    hello = recv_msg(s)
    return s, int(hello["pid"])


def read_died(pid, wait):
    path = os.path.join(D, "died-%d" % pid)
    end = time.monotonic() + wait
    while True:
        try:
            with open(path) as f:
                code, why = f.read(200).strip().split(" ", 1)
                return int(code), why
        except (OSError, ValueError):
            if time.monotonic() > end:
                return 1, "died"
            time.sleep(0.05)


def note(msg):
    sys.stderr.write("[sandcell] %s\n" % msg)
    sys.stderr.flush()


def client_run(status_path, timeout, clear):
    code = sys.stdin.buffer.read(MAX_SRC + 1)
    if len(code) > MAX_SRC:
        note("source larger than %d bytes" % MAX_SRC)
        return 125
    lock = open(os.path.join(D, "run.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one run at a time per session
    st = {"exit": 0, "timeout": 0, "restarted": 0, "crashed": 0, "count": 0}
    s, pid = open_session()
    seen = os.path.join(D, "worker")
    try:
        with open(seen) as f:
            last = int(f.read(32) or 0)
    except (OSError, ValueError):
        last = 0
    if last and last != pid:
        st["restarted"] = 1
        why = read_died(last, 0)[1]
        note("the Python interpreter was restarted (it %s); earlier state is lost" % why)
    with open(seen, "w") as f:
        f.write(str(pid))
    s.sendmsg([struct.pack("!II", len(code), FLAG_CLEAR if clear else 0)],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("ii", 1, 2))])
    s.sendall(code)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    interrupted_by_us = False
    killed = False
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        try:
            if left is not None and left <= 0:
                raise socket.timeout
            s.settimeout(left)
            res = recv_msg(s)
            st["exit"] = int(res["exit"])
            st["count"] = int(res["count"])
            break
        except socket.timeout:
            if not interrupted_by_us:
                interrupted_by_us = True
                st["timeout"] = 1
                os.kill(pid, signal.SIGINT)
                deadline = time.monotonic() + GRACE
                continue
            note("the code did not stop within %gs of SIGINT: the interpreter is killed" % GRACE)
            os.kill(pid, signal.SIGKILL)
            killed = True
        except (EOFError, OSError, ValueError):
            pass
        # the worker went away without a result
        code_, why = read_died(pid, 10)
        st["exit"] = code_ if code_ else 1
        st["crashed"] = 1
        st["restarted"] = 1
        with open(seen, "w") as f:
            f.write("0")  # noted here, not again on the next run
        if not killed:
            note("the Python interpreter %s while running this code; it is restarted "
                 "and the session's state is lost" % why)
        else:
            note("the interpreter is restarted and the session's state is lost")
        break
    if st["timeout"]:
        note("timed out after %gs%s" % (timeout, "" if st["crashed"] else
                                          ": interrupted (SIGINT), the session goes on"))
        st["exit"] = 124
    st["plots"] = count_plots()
    with open(status_path + ".tmp", "w") as f:
        f.write("".join("%s=%d\n" % kv for kv in st.items()))
    os.rename(status_path + ".tmp", status_path)
    return st["exit"]


def main(argv):
    if len(argv) >= 2 and argv[1] == "serve":
        return serve()
    if len(argv) >= 2 and argv[1] == "start":
        os.makedirs(D, mode=0o700, exist_ok=True)
        s, pid = open_session()
        s.close()
        with open(os.path.join(D, "worker"), "w") as f:
            f.write(str(pid))
        return 0
    if len(argv) == 5 and argv[1] == "run":
        return client_run(argv[2], float(argv[3]), argv[4] == "1")
    sys.stderr.write("usage: driver.py serve|start|run STATUS TIMEOUT CLEAR\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
