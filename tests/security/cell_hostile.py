"""A program that tries to leave traces in its cell for whatever runs
there next (issue #39): files in every writable place, a huge file and a
deleted one held open, daemons that escaped by setsid and a double fork,
a stopped child and a traced one, SysV shared memory, semaphores and
message queues, a POSIX message queue, listening TCP and UDP ports, an
abstract unix socket, a key in the user keyring, a new hostname, a peak of
memory use. Each attempt may be refused by the cell's policy; what went
through is what the next program must not see.

Its last line is the record (cell_recorder.py, beside it in the cell) of
its own cell with the traces in place: what a reused cell that was not
made fresh would show."""
import ctypes
import ctypes.util
import json
import os
import signal
import socket
import sys
import time

import cell_recorder

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
libc.syscall.restype = ctypes.c_long
X86 = os.uname().machine == "x86_64"


def attempt(what, fn):
    try:
        fn()
        print("left:", what, file=sys.stderr)
    except Exception as e:  # a refusal is an answer too
        print("refused:", what, e, file=sys.stderr)


def write_files():
    for d in ("/tmp", "/var/tmp", "/dev/shm", "/run", "/home", "/root", "/mnt", "/etc",
              "/usr/local/bin", "/opt", "/srv", "."):
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "hostile-trace"), "w") as f:
                f.write("left by the program before\n")
        except OSError as e:
            print("refused: file in", d, e, file=sys.stderr)
    os.symlink("/etc/shadow", "/tmp/hostile-link")
    os.chmod("/tmp", 0o700)


def huge_file():
    with open("/tmp/hostile-huge", "wb") as f:
        f.write(b"\0" * (32 << 20))


def sysv():
    # shmget, semget, msgget with fixed keys, 0600
    creat = 0o1000 | 0o600
    if libc.shmget(0x5C5C0001, 4096, creat) < 0 or libc.semget(0x5C5C0002, 1, creat) < 0 \
            or libc.msgget(0x5C5C0003, creat) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def mqueue():
    try:
        mq_open = libc.mq_open
    except AttributeError:
        mq_open = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1",
                              use_errno=True).mq_open
    mq_open.restype = ctypes.c_int
    mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    if mq_open(b"/sandcell-hostile", os.O_CREAT | os.O_RDWR, 0o600, None) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def user_key():
    add_key = 248 if X86 else 217
    if libc.syscall(add_key, b"user", b"sandcell-hostile", b"x", 1, ctypes.c_int(-4)) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def hostname():
    socket.sethostname("hostile")


def peak_memory():
    block = bytearray(160 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    del block


def daemon(body):
    """Run body in a process that escaped: setsid and a double fork; the
    intermediate exits, the grandchild is reparented to the cell's init."""
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    libc.prctl(15, b"sc-hostile")  # PR_SET_NAME, which t_fresh_cells makes its own
    try:
        for fd in (0, 1, 2):
            os.dup2(os.open("/dev/null", os.O_RDWR), fd)
        body()
    finally:
        os._exit(0)


def holder():
    tcp = socket.socket()
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 47001))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 47002))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0sandcell-hostile")
    unix.listen()
    held = open("/tmp/hostile-held", "wb")
    held.write(b"\1" * (8 << 20))
    os.unlink("/tmp/hostile-held")
    shm = libc.shmget(0x5C5C0001, 4096, 0)
    libc.shmat.restype = ctypes.c_void_p
    if shm >= 0:
        libc.shmat(shm, None, 0)
    while True:
        time.sleep(3600)


def sleeper():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        time.sleep(3600)


def stopped_child():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        sleeper()
    os.kill(pid, signal.SIGSTOP)


def traced_child():
    """A daemon that holds another under ptrace (PTRACE_SEIZE)."""
    r, w = os.pipe()

    def tracer():
        target = os.fork()
        if target == 0:
            sleeper()
        seize = 0x4206
        ok = libc.ptrace(seize, target, None, None) == 0
        os.write(w, b"y" if ok else b"n")
        sleeper()
    daemon(tracer)
    if os.read(r, 1) != b"y":
        raise OSError("ptrace refused")


def main():
    attempt("files, a symlink, /tmp's mode", write_files)
    attempt("a huge file", huge_file)
    attempt("SysV shm, sem, msg", sysv)
    attempt("a POSIX message queue", mqueue)
    attempt("a user key", user_key)
    attempt("a hostname", hostname)
    attempt("a peak of memory", peak_memory)
    attempt("a daemon holding ports, sockets, a deleted file, shm", lambda: daemon(holder))
    attempt("a daemon that ignores SIGTERM", lambda: daemon(sleeper))
    attempt("a stopped child", stopped_child)
    attempt("a traced child", traced_child)
    time.sleep(0.5)  # the daemons bind and seize
    json.dump(cell_recorder.record(), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


main()
