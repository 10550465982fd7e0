"""Everything a process in a cell can observe that a program before it
could have left behind, as one JSON document on stdout (issue #39: a cell
handed out again must be indistinguishable from a fresh one). Runs inside
the cell with the standard library only. Values that differ between any two
fresh cells (times, inode and mount ids, pids, the peak of memory use) are
left out or reduced to what a leftover would change.

Also a module: hostile.py imports record() to show that the record does
see what it leaves in its own cell (so the comparison can fail)."""
import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import resource
import socket
import stat
import sys

# Where a program may write (the root is a writable overlay: its system
# directories too), walked whole; /proc, /sys and /dev's nodes are not
# files a program leaves.
WALK = ["/tmp", "/var", "/dev/shm", "/run", "/home", "/root", "/testbed", "/mnt",
        "/etc", "/usr/local", "/opt", "/srv"]
MAX_HASHED = 1 << 20
# Variables the server sets per request (a trace context, the plot
# directory of the run): their presence is recorded, not their values.
PER_REQUEST = ("TRACEPARENT", "SANDCELL_PLOTS")
MAX_ENTRIES = 20000


def _walk(top, out):
    try:
        st = os.lstat(top)
    except OSError as e:
        out[top] = "missing:" + errno.errorcode.get(e.errno, str(e.errno))
        return
    out[top] = _describe(top, st)
    if not stat.S_ISDIR(st.st_mode):
        return
    for dirpath, dirnames, filenames in os.walk(top, onerror=lambda e: None):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            if len(out) >= MAX_ENTRIES:
                out["!truncated"] = True
                return
            path = os.path.join(dirpath, name)
            try:
                out[path] = _describe(path, os.lstat(path))
            except OSError as e:
                out[path] = "unreadable:" + errno.errorcode.get(e.errno, str(e.errno))


def _describe(path, st):
    kind = stat.S_IFMT(st.st_mode)
    d = "%o %d:%d" % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if stat.S_ISREG(kind):
        d += " file %d" % st.st_size
        if st.st_size <= MAX_HASHED:
            try:
                with open(path, "rb") as f:
                    d += " " + hashlib.sha256(f.read()).hexdigest()[:16]
            except OSError as e:
                d += " unreadable:" + errno.errorcode.get(e.errno, str(e.errno))
    elif stat.S_ISLNK(kind):
        d += " link " + os.readlink(path)
    elif stat.S_ISDIR(kind):
        d += " dir"
    else:
        d += " special %o" % kind
    return d


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return "unreadable:" + errno.errorcode.get(e.errno, str(e.errno))


def _processes():
    """Every other process of the cell: its name, state and tracer."""
    me = os.getpid()
    procs = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        status = _read("/proc/%s/status" % entry)
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        tracer = fields.get("TracerPid", "?").strip()
        procs.append("%s %s traced=%s" % (fields.get("Name", "?").strip(),
                                          fields.get("State", "?").strip()[:1],
                                          "no" if tracer == "0" else "yes"))
    return sorted(procs)


def _table(path, keep):
    """The rows of a /proc table, each reduced to the columns `keep`
    (indexes), header dropped."""
    text = _read(path)
    if text.startswith("unreadable:"):
        return text
    rows = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        rows.append(" ".join(cols[i] for i in keep if i < len(cols)))
    return sorted(rows)


def _sockets():
    listening = {}
    for proto in ("tcp", "tcp6"):
        rows = _table("/proc/net/" + proto, [1, 3])
        listening[proto] = rows if isinstance(rows, str) else \
            sorted(r.split()[0] for r in rows if r.endswith(" 0A"))
    for proto in ("udp", "udp6"):
        rows = _table("/proc/net/" + proto, [1])
        listening[proto] = rows
    unix = _table("/proc/net/unix", [7])
    listening["unix_abstract"] = unix if isinstance(unix, str) else \
        sorted(r for r in unix if r.startswith("@"))
    return listening


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mqueue(name):
    """Whether the POSIX message queue `name` exists (queues cannot be
    listed without mounting mqueue, which a cell's process cannot)."""
    libc = _libc()
    try:
        mq_open = libc.mq_open
    except AttributeError:
        try:
            mq_open = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1",
                                  use_errno=True).mq_open
        except (OSError, AttributeError):
            return "no mq_open"
    mq_open.restype = ctypes.c_int
    mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    fd = mq_open(name.encode(), os.O_RDONLY)
    if fd >= 0:
        os.close(fd)
        return "exists"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def _key(description):
    """keyctl(KEYCTL_SEARCH) of a user key in the user keyring: its
    existence, or why the search failed (ENOKEY, or a refusal)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    sys_keyctl = 250 if os.uname().machine == "x86_64" else 219
    r = libc.syscall(sys_keyctl, 10, ctypes.c_int(-4), b"user", description.encode(), 0)
    return "exists" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def _self_state():
    status = _read("/proc/self/status")
    keep = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
            "NoNewPrivs", "Seccomp", "Seccomp_filters", "SigBlk", "SigIgn", "Umask")
    fields = {}
    for line in status.splitlines():
        k, _, v = line.partition(":")
        if k in keep:
            fields[k] = v.strip()
    fields["cwd"] = os.getcwd()
    fields["oom_score_adj"] = _read("/proc/self/oom_score_adj").strip()
    fields["personality"] = _read("/proc/self/personality").strip()
    # on cgroup v1 the path names the cell's cgroup on the host (another
    # for every cell): its depth is what a program could change
    fields["cgroup"] = sorted("%s depth %d" % (line.rsplit(":", 1)[0], line.count("/"))
                              for line in _read("/proc/self/cgroup").splitlines())
    fields["loginuid"] = _read("/proc/self/loginuid").strip()
    # mount points, types and options: not the ids, which count up
    mounts = []
    for line in _read("/proc/self/mountinfo").splitlines():
        pre, _, post = line.partition(" - ")
        a, b = pre.split(), post.split()
        if len(a) >= 6 and len(b) >= 3:
            mounts.append("%s %s %s %s" % (a[4], a[5], b[0], b[2]))
    fields["mounts"] = mounts
    return fields


def _files():
    """Per walked directory its entries; a large tree (the image's /etc)
    as its count and a digest of its entries, so that the record stays
    small enough for a command's output."""
    out = {}
    for top in WALK:
        entries = {}
        _walk(top, entries)
        if len(entries) <= 400:
            out[top] = entries
        else:
            text = json.dumps(entries, sort_keys=True).encode()
            out[top] = "%d entries, sha256 %s" % (len(entries), hashlib.sha256(text).hexdigest())
    return out


def record():
    return {
        "files": _files(),
        "root": sorted(os.listdir("/")),
        "dev": sorted(os.listdir("/dev")),
        "processes": _processes(),
        "sysvipc": {k: _table("/proc/sysvipc/" + k, [0, 2])
                    for k in ("shm", "sem", "msg")},
        "mqueue": _mqueue("/sandcell-hostile"),
        "sockets": _sockets(),
        "hostname": socket.gethostname(),
        "domainname": _read("/proc/sys/kernel/domainname").strip(),
        "environ": sorted("%s=%s" % (k, "(per request)" if k in PER_REQUEST else v)
                          for k, v in os.environ.items()),
        "rlimits": {name: resource.getrlimit(getattr(resource, name))
                    for name in sorted(dir(resource)) if name.startswith("RLIMIT_")},
        "keyring": _key("sandcell-hostile"),
        "self": _self_state(),
    }


if __name__ == "__main__":
    json.dump(record(), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
