# sandcell: the client of a kept Python session (lang/py/driver.py), exec'd
# in the cell for each `session run` and once at `session start`. It
# imports built-in and C modules only (no socket, json, re, enum: those
# cost more than the rest of a warm round trip), so a run starts about as
# fast as a bare interpreter. Written into the cell by lang/.
#
#   client.py start KEY      start the supervisor (if not running), wait
#   client.py run KEY S C    read code from stdin, run it in the worker
#                            with timeout S (0: none), C=1 clears the plots;
#                            write "key=value" lines into stdin after the
#                            code (stdin is a memfd of the host's, which
#                            reads them back: no status file is left)
#
# KEY names the session's own directory (its socket, locks and notes):
# a secret the host derives from the cell's token, so the cell's processes
# cannot know it before the session starts and no socket they made earlier
# is ever connected to.
#
# The client passes its own stdout and stderr to the worker (SCM_RIGHTS),
# so everything the code writes, subprocesses included, reaches the cell's
# exec pipes as it happens.
import _signal
import _socket
import fcntl
import os
import sys
import time
from _struct import pack, unpack

D = os.environ.get("SANDCELL_SESSION_DIR", "/tmp/.sandcell/session")
K = None  # D/KEY, set by main
PLOTS = os.path.join(D, "plots")
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver.py")
MAX_SRC = 4 << 20
MAX_PLOTS = 64
GRACE = 5.0
HELLO_WAIT = 30.0  # a worker answers at once, or once it has imported IPython
FLAG_CLEAR = 1


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        chunk = s.recv(min(n - len(b), 1 << 16))
        if not chunk:
            raise EOFError
        b += chunk
    return bytes(b)


def recv_msg(s):
    """A message of the driver: "key=integer" lines, length first."""
    (n,) = unpack("!I", recv_exact(s, 4))
    if n > 65536:
        raise ValueError("message too long")
    out = {}
    for line in recv_exact(s, n).decode("ascii").splitlines():
        k, _, v = line.partition("=")
        out[k] = int(v)
    return out


def count_plots():
    """The plots there, MAX_PLOTS + 1 when more were made than kept
    (sc_plots leaves plot-more)."""
    n = 0
    while n < MAX_PLOTS and any(os.path.exists(os.path.join(PLOTS, "plot-%04d.%s" % (n + 1, f)))
                                for f in ("png", "html")):
        n += 1
    if n == MAX_PLOTS and os.path.exists(os.path.join(PLOTS, "plot-more")):
        n += 1
    return n


def connect(deadline):
    while True:
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.connect(os.path.join(K, "s.sock"))
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def spawn_supervisor():
    import subprocess
    subprocess.Popen([sys.executable, "-u", DRIVER, "serve", K],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)


def open_session():
    """A connection to a worker (starting the supervisor when none runs)
    and the worker's pid."""
    try:
        s = connect(time.monotonic())
    except OSError:
        spawn_supervisor()
        s = connect(time.monotonic() + HELLO_WAIT)
    s.settimeout(HELLO_WAIT)
    try:
        hello = recv_msg(s)
    except _socket.timeout:
        note("the session's interpreter did not answer within %gs" % HELLO_WAIT)
        raise SystemExit(125)
    return s, int(hello["pid"])


def read_died(pid, wait):
    path = os.path.join(K, "died-%d" % pid)
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


def client_run(timeout, clear):
    code = os.read(0, MAX_SRC + 1)
    while len(code) <= MAX_SRC:
        more = os.read(0, MAX_SRC + 1 - len(code))
        if not more:
            break
        code += more
    if len(code) > MAX_SRC:
        note("source larger than %d bytes" % MAX_SRC)
        return 125
    lock = open(os.path.join(K, "run.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one run at a time per session
    st = {"exit": 0, "timeout": 0, "restarted": 0, "crashed": 0, "count": 0}
    s, pid = open_session()
    seen = os.path.join(K, "worker")
    try:
        with open(seen) as f:
            last = int(f.read(32) or 0)
    except (OSError, ValueError):
        last = 0
    if last and last != pid:
        st["restarted"] = 1
        why = read_died(last, 0)[1]
        note("the Python interpreter was restarted (it %s); earlier state is lost" % why)
    if last != pid:
        with open(seen, "w") as f:
            f.write(str(pid))
    s.sendmsg([pack("!II", len(code), FLAG_CLEAR if clear else 0)],
              [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, pack("ii", 1, 2))])
    s.sendall(code)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    interrupted_by_us = False
    killed = False
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        try:
            if left is not None and left <= 0:
                raise _socket.timeout
            s.settimeout(left)
            res = recv_msg(s)
            st["exit"] = int(res["exit"])
            st["count"] = int(res["count"])
            break
        except _socket.timeout:  # TimeoutError since 3.10
            if not interrupted_by_us:
                interrupted_by_us = True
                st["timeout"] = 1
                os.kill(pid, _signal.SIGINT)
                deadline = time.monotonic() + GRACE
                continue
            note("the code did not stop within %gs of SIGINT: the interpreter is killed" % GRACE)
            os.kill(pid, _signal.SIGKILL)
            killed = True
        except (EOFError, OSError, ValueError, KeyError):
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
    os.pwrite(0, "".join("%s=%d\n" % kv for kv in st.items()).encode("ascii"), len(code))
    return st["exit"]


def key_dir(key):
    """D/KEY, made (0700) when missing; KEY is 32 hex digits."""
    global K
    if len(key) != 32 or key.strip("0123456789abcdef"):
        raise SystemExit("client.py: bad session key")
    K = os.path.join(D, key)
    try:
        os.mkdir(K, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(K)
    if (st.st_mode & 0o170000) != 0o040000 or st.st_uid != os.getuid():
        raise SystemExit("client.py: %s is not the session's directory" % K)


def main(argv):
    if len(argv) == 3 and argv[1] == "start":
        os.makedirs(D, mode=0o700, exist_ok=True)
        key_dir(argv[2])
        s, pid = open_session()
        s.close()
        with open(os.path.join(K, "worker"), "w") as f:
            f.write(str(pid))
        return 0
    if len(argv) == 5 and argv[1] == "run":
        key_dir(argv[2])
        return client_run(float(argv[3]), argv[4] == "1")
    sys.stderr.write("usage: client.py start KEY | run KEY TIMEOUT CLEAR\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
