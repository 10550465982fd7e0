#!/usr/bin/env python3
"""Run a command whose stdin is a fresh pty, then report what a host-side
reader of that terminal would receive as typed input (e.g. characters a
cell pushed with TIOCSTI).

usage: tty_attack.py TIMEOUT CMD [ARG...]
Prints the command's stdout and stderr, then one line
  HOST-TTY-INPUT: <repr of the bytes waiting in the terminal's input queue>
and exits with the command's status (124 if it had to be killed).

The pty is nobody's controlling terminal (opened with O_NOCTTY, and the
command is not made a session leader here), exactly like a terminal a
user's shell reads from while sandcell runs."""
import os
import select
import subprocess
import sys
import tty


def main():
    timeout = float(sys.argv[1])
    cmd = sys.argv[2:]
    master, slave = os.openpty()
    # Raw mode: injected characters become readable at once, without echo.
    tty.setraw(slave)
    try:
        p = subprocess.run(cmd, stdin=slave, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        rc = p.returncode
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or b"", e.stderr or b""
    sys.stdout.write(out.decode(errors="replace"))
    sys.stderr.write(err.decode(errors="replace"))
    pending = b""
    while len(pending) < 65536:
        r, _, _ = select.select([slave], [], [], 0)
        if not r:
            break
        chunk = os.read(slave, 4096)
        if not chunk:
            break
        pending += chunk
    print("HOST-TTY-INPUT: %r" % pending)
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
