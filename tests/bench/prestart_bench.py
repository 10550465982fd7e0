"""One /run_code print(1)'s latency with the interpreter started ahead,
without it (a server without --prestart), and python3 -c 'print(1)' spawned on the
host, alternated round by round (scripts/bench_code.sh; issue #39). Each
request waits GAP seconds first, so that the pool has its next cell
ready: the latency of a request to a server that keeps up, not of one
queued behind the pool's refill. Standard library only.
usage: PRE_PORT FRESH_PORT TOKEN_FILE ROUNDS GAP PYTHON"""
import http.client
import json
import statistics
import subprocess
import sys
import time

pre, fresh, token_file, rounds, gap, python = sys.argv[1:7]
rounds, gap = int(rounds), float(gap)
with open(token_file) as f:
    token = f.read().strip()
body = json.dumps({"code": "print(1)"})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
conns = {p: http.client.HTTPConnection("127.0.0.1", int(p), timeout=120) for p in (pre, fresh)}


def request(port):
    c = conns[port]
    t0 = time.perf_counter()
    c.request("POST", "/run_code", body, headers)
    r = c.getresponse()
    a = json.loads(r.read())
    if r.status != 200 or (a.get("run_result") or {}).get("stdout") != "1\n":
        sys.exit("prestart_bench: unexpected answer %d: %.300r" % (r.status, a))
    return (time.perf_counter() - t0) * 1000


def host():
    t0 = time.perf_counter()
    subprocess.run([python, "-c", "print(1)"], stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1000


times = {"pre": [], "fresh": [], "host": []}
for i in range(rounds + 2):
    for name, fn in (("pre", lambda: request(pre)), ("fresh", lambda: request(fresh)),
                     ("host", host)):
        time.sleep(gap)
        t = fn()
        if i >= 2:
            times[name].append(t)
p, f, h = (statistics.median(times[k]) for k in ("pre", "fresh", "host"))
print("serve /run_code print(1), one request at a time (%.1f s apart):" % gap)
print("  --prestart %7.2f ms   without %7.2f ms   host python3 -c %7.2f ms" % (p, f, h))
print("  ratio to the host: --prestart %.2f (goal <= 1.00, #39), without %.2f" % (p / h, f / h))
