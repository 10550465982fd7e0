#!/usr/bin/env python3
"""Run a command on a fresh pty that is its controlling terminal (24x80),
and once it printed "READY" change the terminal's size to 33x111, as a
person resizing the window would (the kernel sends SIGWINCH to the
terminal's foreground process group: sandcell).

usage: tty_winch.py TIMEOUT CMD [ARG...]
Prints the command's output as it appeared on the terminal and exits with
its status (124 when it had to be killed)."""
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    timeout = float(sys.argv[1])
    cmd = sys.argv[2:]
    master, slave = os.openpty()
    set_size(master, 24, 80)

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=ctty, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    resized = False
    rc = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            p.kill()
            rc = 124
            break
        r, _, _ = select.select([master], [], [], min(left, 0.2))
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                chunk = b""
            out += chunk
            if not chunk and p.poll() is not None:
                break  # the slave side is gone: nothing more to read
            if not resized and b"READY" in out:
                set_size(master, 33, 111)
                resized = True
        if p.poll() is not None and not r:
            break
    rc = p.wait() if rc is None else (p.wait(), rc)[1]
    sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
    sys.exit(rc)


main()
