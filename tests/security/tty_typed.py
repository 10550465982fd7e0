#!/usr/bin/env python3
"""Run a command the way `sandcell run ... > file` runs at a terminal: a
fresh pty in its normal (canonical) mode is the command's controlling
terminal and stdin, stdout and stderr go to a pipe. Type INPUT into the
terminal (once the command printed "READY", or at once when INPUT starts
with "@"), and after the command has exited, type "sc-after-exit\\n".

usage: tty_typed.py TIMEOUT INPUT CMD [ARG...]
INPUT takes Python escapes (\\n, \\x04 for ^D).
Prints the command's stdout and stderr, then
  HOST-TTY-INPUT: <repr of the bytes left in the terminal's input queue>
and exits with the command's status (124 when it had to be killed)."""
import codecs
import fcntl
import os
import select
import subprocess
import sys
import termios
import time


def pending(fd, wait):
    # typed bytes reach the line discipline a moment after the write:
    # wait for them (a reader left behind would take them instead)
    select.select([fd], [], [], wait)
    fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    got = b""
    while len(got) < 65536:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return got


def main():
    timeout = float(sys.argv[1])
    typed = sys.argv[2]
    at_once = typed.startswith("@")
    typed = codecs.decode(typed[1:] if at_once else typed, "unicode_escape").encode("latin-1")
    cmd = sys.argv[3:]
    master, slave = os.openpty()
    mode = termios.tcgetattr(slave)
    mode[3] &= ~termios.ECHO  # what is typed is not mixed into the output
    termios.tcsetattr(slave, termios.TCSANOW, mode)
    rd, wr = os.pipe()

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=wr, stderr=wr,
                         preexec_fn=ctty, close_fds=True)
    os.close(wr)
    if at_once:
        os.write(master, typed)
    out = b""
    deadline = time.monotonic() + timeout
    sent = at_once
    rc = None
    eof = False
    while not eof:
        left = deadline - time.monotonic()
        if left <= 0:
            p.kill()
            rc = 124
            break
        fds = [rd, master]
        r, _, _ = select.select(fds, [], [], min(left, 0.2))
        if master in r:
            try:
                os.read(master, 65536)  # the terminal's own output, if any
            except OSError:
                pass
        if rd in r:
            chunk = os.read(rd, 65536)
            eof = not chunk
            out += chunk
            if not sent and b"READY" in out:
                os.write(master, typed)
                sent = True
    if rc is None:
        # the output ended: the command is done (or about to be)
        try:
            rc = p.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = 124
    p.wait()
    os.write(master, b"sc-after-exit\n")
    sys.stdout.write(out.decode(errors="replace"))
    print("HOST-TTY-INPUT: %r" % pending(slave, 30))
    sys.exit(rc if rc >= 0 else 128 - rc)


main()
