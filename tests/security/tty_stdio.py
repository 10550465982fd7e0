#!/usr/bin/env python3
"""Give a command a fresh pty as its stdin (WHICH=in) or as its stdout
(WHICH=out), the way a user's terminal is one when the other side is
redirected (`sandcell run ... > file`, `echo x | sandcell run ...`), with
"sc-typed-keys" already typed into it, and report what the command saw and
what is left of the typed keys.

usage: tty_stdio.py TIMEOUT in|out CMD [ARG...]
Prints the command's stdout (WHICH=in) or what it wrote on the terminal
(WHICH=out), its stderr, then
  HOST-TTY-INPUT: <repr of the typed bytes still waiting to be read>
and exits with the command's status (124 when it had to be killed)."""
import os
import select
import subprocess
import sys
import tty


def pending(fd):
    got = b""
    while len(got) < 65536:
        r, _, _ = select.select([fd], [], [], 0)
        if not r:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        got += chunk
    return got


def main():
    timeout = float(sys.argv[1])
    which = sys.argv[2]
    cmd = sys.argv[3:]
    master, slave = os.openpty()
    tty.setraw(slave)  # typed bytes are readable at once, not echoed
    os.write(master, b"sc-typed-keys\n")
    io = {"stdin": slave} if which == "in" else {"stdin": subprocess.DEVNULL, "stdout": slave}
    try:
        p = subprocess.run(cmd, stdout=io.get("stdout", subprocess.PIPE),
                           stderr=subprocess.PIPE, stdin=io["stdin"], timeout=timeout)
        rc, out, err = p.returncode, p.stdout or b"", p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or b"", e.stderr or b""
    if which == "out":
        out = pending(master)
    sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
    sys.stdout.write(err.decode(errors="replace"))
    print("HOST-TTY-INPUT: %r" % pending(slave))
    sys.exit(rc if rc >= 0 else 128 - rc)


main()
