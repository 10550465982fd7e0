#!/usr/bin/env python3
"""Run a command on a fresh pty, as a person at a terminal would (the pty is
its controlling terminal, stdin, stdout and stderr), type INPUT into it, and
report what a test needs to know about that terminal.

usage: tty_session.py TIMEOUT INPUT CMD [ARG...]
INPUT is typed after the command printed "READY" (Python escapes: \\n, \\x03).
Prints the command's output as it appeared on the terminal, then
  HOST-TTY-DEV: <st_dev:st_rdev of the terminal (devpts instance:pty)>
  HOST-TTY-MODE-RESTORED: True|False  (termios after the command = before)
  HOST-TTY-INPUT: <repr of bytes left in the terminal's input queue>
and exits with the command's status (124 when it had to be killed)."""
import codecs
import fcntl
import os
import select
import subprocess
import sys
import termios
import time


def main():
    timeout = float(sys.argv[1])
    typed = codecs.decode(sys.argv[2], "unicode_escape").encode("latin-1")
    cmd = sys.argv[3:]
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    st = os.fstat(slave)
    dev = "%d:%d" % (st.st_dev, st.st_rdev)

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=ctty, close_fds=True)
    out = b""
    deadline = time.monotonic() + timeout
    sent = False
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
            if not sent and b"READY" in out:
                os.write(master, typed)
                sent = True
        if p.poll() is not None and not r:
            break
    if rc is None:
        rc = p.wait()
    else:
        p.wait()
    after = termios.tcgetattr(slave)
    # what is waiting to be read by the host's side of the terminal
    pending = b""
    fl = fcntl.fcntl(slave, fcntl.F_GETFL)
    fcntl.fcntl(slave, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    try:
        termios.tcsetattr(slave, termios.TCSANOW, before)
        pending = os.read(slave, 65536)
    except OSError:
        pass
    sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
    print()
    print("HOST-TTY-DEV:", dev)
    print("HOST-TTY-MODE-RESTORED:", after == before)
    print("HOST-TTY-INPUT:", repr(pending))
    sys.exit(rc)


main()
