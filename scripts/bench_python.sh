#!/usr/bin/env bash
# The Python client (python/): a loop of
#   with SandboxSession() as s: s.run("print(1)")
# (a cell from the private server's pool, its work directory made, the code
# written and run, the cell removed) against
#   subprocess.run(["python3", "-c", "print(1)"])
# on the host, alternating round by round in one process; medians and their
# ratio. Also the same print(1) in an already open session.
# The host spawn uses the python3 the cell runs (/usr/bin/python3).
# usage: scripts/bench_python.sh [ROUNDS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-100}
[ -x build/sandcell ] || scripts/setup.sh
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
work=$(mktemp -d /tmp/sandcell-bench-python.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
SANDCELL_ROOT="$work/root" SANDCELL_BIN=$PWD/build/sandcell PYTHONPATH=$PWD/python TMPDIR=$work \
	"$py" - "$rounds" "$py" <<'PYEOF'
import statistics, subprocess, sys, time
from sandcell import SandboxSession

rounds, py = int(sys.argv[1]), sys.argv[2]

def session_loop():
    with SandboxSession() as s:
        assert s.run("print(1)").stdout == "1\n"

def host():
    assert subprocess.run([py, "-c", "print(1)"], capture_output=True).stdout == b"1\n"

def timed(f):
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000

session_loop()  # starts the private server; not counted
a, b = [], []
for _ in range(rounds):
    a.append(timed(session_loop))
    b.append(timed(host))
sa, sb = statistics.median(a), statistics.median(b)
print("python SandboxSession open+run+close %7.2f ms   host subprocess python3 -c %7.2f ms   ratio %.2f"
      % (sa, sb, sa / sb))
with SandboxSession() as s:
    s.run("print(1)")
    c, d = [], []
    for _ in range(rounds):
        c.append(timed(lambda: s.run("print(1)")))
        d.append(timed(host))
sc, sd = statistics.median(c), statistics.median(d)
print("python session.run('print(1)') warm   %7.2f ms   host subprocess python3 -c %7.2f ms   ratio %.2f"
      % (sc, sd, sc / sd))
PYEOF
