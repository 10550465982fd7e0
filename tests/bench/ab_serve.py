"""Interleaved A/B of sandcell servers: each round sends the same request
to every server in turn (each over its own kept connection), then spawns
the host's floor once, so that load drifting over the run weighs on all
alike. Prints the medians and their ratios to the floor, per route.
Standard library only.
usage: ab_serve.py PORT,PORT[,...] TOKEN_FILE ROUNDS ROUTE
ROUTE: run_code (POST /run_code print(1); floor python3 -c), cell_run
(POST /cells/{id}/run print(1); floor python3 -c), exec (POST
/cells/{id}/exec /bin/true; floor /bin/true)."""
import http.client
import json
import statistics
import subprocess
import sys
import time

WARM = 5


def main():
    ports = [int(p) for p in sys.argv[1].split(",")]
    with open(sys.argv[2]) as f:
        token = f.read().strip()
    rounds, route = int(sys.argv[3]), sys.argv[4]
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    conns = [http.client.HTTPConnection("127.0.0.1", p, timeout=120) for p in ports]
    py = "/usr/bin/python3"
    if route == "exec":
        body, floor, want = {"argv": ["/bin/true"]}, ["/bin/true"], None
    else:
        body, floor, want = {"code": "print(1)"}, [py, "-c", "print(1)"], "1\n"
    paths = []
    for c in conns:
        if route == "run_code":
            paths.append("/run_code")
            continue
        c.request("POST", "/cells", "{}", headers)
        r = c.getresponse()
        cid = json.loads(r.read())["id"]
        paths.append("/cells/%s/%s" % (cid, "exec" if route == "exec" else "run"))
    data = json.dumps(body)
    times = [[] for _ in conns]
    host = []
    for i in range(rounds + WARM):
        for k, c in enumerate(conns):
            t0 = time.perf_counter()
            c.request("POST", paths[k], data, headers)
            r = c.getresponse()
            answer = json.loads(r.read())
            dt = (time.perf_counter() - t0) * 1000
            out = (answer.get("run_result") or {}).get("stdout") if want else answer.get("stdout")
            if r.status != 200 or (want is not None and out != want):
                sys.exit("ab_serve: server %d answered %d: %.300r" % (k, r.status, answer))
            if i >= WARM:
                times[k].append(dt)
        t0 = time.perf_counter()
        subprocess.run(floor, stdout=subprocess.DEVNULL, check=True)
        if i >= WARM:
            host.append((time.perf_counter() - t0) * 1000)
    h = statistics.median(host)
    cols = ["server %d %.2f ms (%.2fx)" % (k, statistics.median(t), statistics.median(t) / h)
            for k, t in enumerate(times)]
    print("%-9s floor %s %.2f ms   %s" % (route, floor[0].rsplit("/", 1)[-1], h, "   ".join(cols)))


if __name__ == "__main__":
    main()
