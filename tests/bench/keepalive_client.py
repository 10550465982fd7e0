"""POST /run_code print(1) ROUNDS times over one kept HTTP connection and
print the median round trip in ms (scripts/bench_code.sh). Standard
library only. usage: PORT TOKEN_FILE ROUNDS"""
import http.client
import json
import statistics
import sys
import time

port, token_file, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with open(token_file) as f:
    token = f.read().strip()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
body = json.dumps({"code": "print(1)"})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
times = []
for i in range(rounds + 3):  # the first three warm the connection and pool
    t0 = time.perf_counter()
    conn.request("POST", "/run_code", body, headers)
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    if resp.status != 200 or (answer.get("run_result") or {}).get("stdout") != "1\n":
        sys.exit("keepalive_client: unexpected answer %d: %.300r" % (resp.status, answer))
    if i >= 3:
        times.append((time.perf_counter() - t0) * 1000)
print("%.2f" % statistics.median(times))
