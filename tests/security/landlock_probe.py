"""Probes for t_landlock.sh (standard library only).

serve SOCK DIR   host side: hand an fd of DIR to every client of the unix
                 socket SOCK (SCM_RIGHTS), as a host process that leaked
                 one into the cell would.
read SOCK NAME   in the cell: take that fd and open NAME beneath it; print
                 the file's first line, or the errno's name.
loopback         in the cell: listen on 127.0.0.1 (any port) and connect to
                 it; print "connected" or the errno's name.
connect PORT     in the cell: connect to 127.0.0.1:PORT; print "connected"
                 or the errno's name.
scope            in the cell: a child connects to its parent's abstract unix
                 socket and signals it (both in the cell's Landlock domain:
                 allowed); print "abstract signal" when both worked.
abstract-server READY SECRET
                 a host process that entered the cell's user, pid and network
                 namespaces (outside its Landlock domain, and still in the
                 host's mount namespace): listen on an abstract unix socket,
                 then write its pid (as the cell sees it) and the host path
                 SECRET to READY; answer until killed.
cross-edge       in the cell: signal (0) that process, connect to its
                 abstract socket, and read SECRET through its /proc/PID/root
                 (the host's root); print "signal:R abstract:R root:R", R
                 being "ok" or the errno's name.
nested           in the cell: stack a Landlock domain of its own that handles
                 reading files and allows none (as sandboxing tools in the
                 cell do), then read /etc/hostname; print the errno's name.
"""
import errno
import os
import socket
import sys


def serve(path, dirpath):
    d = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(8)
    while True:
        c, _ = s.accept()
        socket.send_fds(c, [b"x"], [d])
        c.close()


def read(path, name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    _, fds, _, _ = socket.recv_fds(s, 1, 1)
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=fds[0])
        print(os.read(fd, 200).decode().splitlines()[0])
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


def connect(port, listener=None):
    c = socket.socket()
    try:
        c.connect(("127.0.0.1", port))
        print("connected")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


def loopback():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    connect(ls.getsockname()[1], ls)


def scope():
    import signal
    got = []
    signal.signal(signal.SIGUSR1, lambda *_: got.append("signal"))
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind("\0sandcell-landlock-probe")
    ls.listen(1)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect("\0sandcell-landlock-probe")
        c.sendall(b"abstract")
        os.kill(parent, signal.SIGUSR1)
        os._exit(0)
    conn, _ = ls.accept()
    data = conn.recv(16).decode()
    os.waitpid(pid, 0)
    print(data, *got)


EDGE_SOCKET = "\0sandcell-landlock-edge"


def drop_capabilities():
    """capset(2) to nothing, as the cell's own processes run: then only
    Landlock (not a capability check) keeps them from this process."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    header = ctypes.create_string_buffer(struct.pack("Ii", 0x20080522, 0))  # v3, self
    data = ctypes.create_string_buffer(24)  # two zeroed __user_cap_data_struct
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def abstract_server(ready, secret):
    drop_capabilities()
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(EDGE_SOCKET)
    ls.listen(4)
    tmp = ready + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %s" % (os.getpid(), secret))
    os.chmod(tmp, 0o644)
    os.rename(tmp, ready)
    while True:
        conn, _ = ls.accept()
        conn.close()


def outcome(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def cross_edge():
    pid, secret = open("/x/edge-ready").read().split(" ", 1)
    sig = outcome(lambda: os.kill(int(pid), 0))
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract = outcome(lambda: c.connect(EDGE_SOCKET))
    root = outcome(lambda: open("/proc/%s/root%s" % (pid, secret)).read())
    print("signal:%s abstract:%s root:%s" % (sig, abstract, root))


def nested():
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = ctypes.create_string_buffer(struct.pack("Q", 1 << 2))  # READ_FILE
    fd = libc.syscall(444, attr, 8, 0)  # landlock_create_ruleset
    if fd < 0 or libc.prctl(38, 1, 0, 0, 0) < 0 or libc.syscall(446, fd, 0) < 0:
        print("cannot stack:", errno.errorcode.get(ctypes.get_errno(), "?"))
        return
    try:
        open("/etc/hostname").read()
        print("read")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "serve":
        serve(*args)
    elif mode == "read":
        read(*args)
    elif mode == "loopback":
        loopback()
    elif mode == "connect":
        connect(int(args[0]))
    elif mode == "scope":
        scope()
    elif mode == "nested":
        nested()
    elif mode == "abstract-server":
        abstract_server(*args)
    elif mode == "cross-edge":
        cross_edge()
