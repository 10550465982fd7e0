#!/usr/bin/env bash
# `sandcell serve` benchmarks (issue #17), each against a floor measured in
# the same run on this host:
#   1. POST /run_code python `print(1)` at concurrency 16: p50 latency and
#      requests/s, against spawning `/usr/bin/python3 -c 'print(1)'` on the
#      host at the same concurrency (the floor; goal >= 0.70x its requests/s);
#   2. POST /cells/{id}/exec of /bin/true one at a time: p50 latency against
#      spawning /bin/true on the host (goal <= 1.3x).
# The load generator is Python's standard library (threads + http.client).
# usage: scripts/bench_serve.sh [ROUNDS]   (requests per measurement;
# default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}
conc=16
[ -x build/sandcell ] || scripts/setup.sh
sc=$PWD/build/sandcell
work=$(mktemp -d /tmp/sandcell-bench-serve.XXXXXX)
chmod 755 "$work"
export SANDCELL_ROOT="$work/root"
srv=
trap '[ -n "$srv" ] && kill -TERM "$srv" 2>/dev/null && wait "$srv" 2>/dev/null; rm -rf "$work"' EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/token"
"$sc" serve --listen 127.0.0.1:0 --token-file "$work/token" --port-file "$work/port" \
	--pool "$conc" --max-concurrency 64 ${BENCH_SERVE_FLAGS:-} >/dev/null 2>"$work/serve.err" &
srv=$!
for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "serve: the server did not start"; cat "$work/serve.err"; exit 1; }

/usr/bin/python3 - "http://127.0.0.1:$(cat "$work/port")" "$(cat "$work/token")" "$rounds" "$conc" <<'PY'
import http.client, json, statistics, subprocess, sys, threading, time, urllib.parse

url, token, rounds, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlparse(url)
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

def post(conn, path, body):
    conn.request("POST", path, body=json.dumps(body).encode(), headers=H)
    r = conn.getresponse()
    data = r.read()
    return r.status, json.loads(data)

def load(n, conc, one):
    """n calls of one(state) over conc threads: (requests/s, p50 ms)"""
    lat, lock, left = [], threading.Lock(), [n]
    def worker():
        st = {}
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            t0 = time.monotonic()
            one(st)
            dt = time.monotonic() - t0
            with lock:
                lat.append(dt)
    ts = [threading.Thread(target=worker) for _ in range(conc)]
    t0 = time.monotonic()
    for t in ts: t.start()
    for t in ts: t.join()
    wall = time.monotonic() - t0
    return n / wall, statistics.median(lat) * 1000

def spawn(argv):
    def one(st):
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert r.returncode == 0
    return one

def run_code(st):
    c = st.get("c") or http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    st["c"] = c
    s, got = post(c, "/run_code", {"code": "print(1)", "language": "python"})
    assert s == 200 and got["status"] == "Success" and got["run_result"]["stdout"] == "1\n", got

load(conc, conc, run_code)  # warm the connections and the pool
frps, fp50 = load(rounds, conc, spawn(["/usr/bin/python3", "-c", "print(1)"]))
arps, ap50 = load(rounds, conc, run_code)
print("serve /run_code print(1) c=%d  %7.1f req/s p50 %7.1f ms   host spawn %7.1f req/s p50 %7.1f ms"
      "   ratio %.2f (goal >= 0.70)" % (conc, arps, ap50, frps, fp50, arps / frps))

c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
s, cell = post(c, "/cells", {})
assert s == 201, cell
path = "/cells/%s/exec" % cell["id"]
def api_exec(st):
    s, got = post(c, path, {"argv": ["/bin/true"]})
    assert s == 200 and got["exit_code"] == 0, got
n = max(rounds // 2, 10)
_, hp50 = load(n, 1, spawn(["/bin/true"]))
_, ep50 = load(n, 1, api_exec)
print("serve exec /bin/true   p50 %7.2f ms   host spawn p50 %7.2f ms   ratio %.2f (goal <= 1.2, #20)"
      % (ep50, hp50, ep50 / hp50))
c.request("DELETE", "/cells/" + cell["id"], headers=H)
c.getresponse().read()
PY
