#!/usr/bin/env python3
"""A host service for the network cases: listens on 127.0.0.1 (an
ephemeral port), on [::1] at the same port where possible, and on an
abstract unix socket; logs every connection it accepts, one line each.

usage: listen_log.py READY_FILE LOG_FILE ABSTRACT_NAME
Writes the TCP port to READY_FILE once listening; runs until killed."""
import os
import select
import socket
import sys


def main():
    ready, log, name = sys.argv[1], sys.argv[2], sys.argv[3]
    socks = []
    t4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t4.bind(("127.0.0.1", 0))
    t4.listen(16)
    port = t4.getsockname()[1]
    socks.append(t4)
    try:
        t6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        t6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        t6.bind(("::1", port))
        t6.listen(16)
        socks.append(t6)
    except OSError:
        pass
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.bind("\0" + name)
    u.listen(16)
    socks.append(u)
    with open(log, "a") as f:
        tmp = ready + ".tmp"
        with open(tmp, "w") as r:
            r.write("%d\n" % port)
        os.rename(tmp, ready)
        while True:
            readable, _, _ = select.select(socks, [], [])
            for s in readable:
                c, peer = s.accept()
                f.write("connection on %s from %r\n" % (s.getsockname(), peer))
                f.flush()
                c.close()


if __name__ == "__main__":
    main()
