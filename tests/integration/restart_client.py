#!/usr/bin/python3
"""A client of `sandcell serve` for tests/integration/t_serve_restart.sh
(standard library only). Each subcommand prints "ok - ..." / "FAIL - ..."
lines and exits 1 when something failed.

  restart_client.py URL TOKEN create N CELLS.json   N cells (idle_timeout
                    and files of their own), their ids to CELLS.json
  restart_client.py URL TOKEN load CELLS.json CLIENTS COUNT.txt
                    CLIENTS threads of exec and /run_code until the server
                    is gone; the requests done so far to COUNT.txt as they go
  restart_client.py URL TOKEN verify CELLS.json   after a restart: the same
                    ids, timeouts and files; the token still works
  restart_client.py URL TOKEN delete CELLS.json
URL is http://127.0.0.1:PORT.
"""
import http.client
import json
import os
import sys
import threading
import urllib.parse

FAILS = 0


def ok(cond, what, detail=""):
    global FAILS
    if cond:
        print("ok   - " + what)
    else:
        FAILS += 1
        print("FAIL - " + what + (": " + str(detail)[:800] if detail else ""))
    sys.stdout.flush()
    return cond


class Client:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.token = token

    def call(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = {"Authorization": "Bearer " + self.token}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, raw
        finally:
            c.close()


def idle_timeout(i):
    # each cell a timeout of its own, so that a mix-up shows
    return 1000 + i


def create(cl, n, out):
    cells, bad = [], []
    for i in range(n):
        st, j = cl.call("POST", "/cells", {"idle_timeout": idle_timeout(i)})
        if st != 201 or not isinstance(j, dict):
            bad.append(("create", i, st, j))
            break
        cid = j["id"]
        st, r = cl.call("POST", "/cells/%s/exec" % cid,
                        {"cmd": "mkdir -p /testbed/d && printf %s " + cid + " >/testbed/d/mark"})
        if st != 200 or r.get("exit_code") != 0:
            bad.append(("file", cid, st, r))
        cells.append({"id": cid, "idle_timeout_s": j["idle_timeout_s"]})
    with open(out, "w") as f:
        json.dump(cells, f)
    ok(len(cells) == n and not bad, "%d cells made, each with a file of its own" % n, bad[:3])


def load(cl, cells_file, clients, count_file):
    cells = json.load(open(cells_file))
    done = [0]
    mu = threading.Lock()

    def worker(k):
        i = 0
        while True:
            i += 1
            try:
                if k % 2:
                    cid = cells[(k * 7 + i) % len(cells)]["id"]
                    cl.call("POST", "/cells/%s/exec" % cid, {"cmd": "echo $((6*7)); sleep 0.2"})
                else:
                    cl.call("POST", "/run_code", {"code": "import time; time.sleep(0.3); print(1)",
                                                  "language": "python"})
            except OSError:
                return  # the server is gone
            with mu:
                done[0] += 1
                with open(count_file + ".tmp", "w") as f:
                    f.write("%d\n" % done[0])
                os.replace(count_file + ".tmp", count_file)

    ts = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("ok   - %d clients ended with the server, after %d requests" % (clients, done[0]))


def verify(cl, cells_file):
    cells = json.load(open(cells_file))
    st, j = cl.call("GET", "/cells")
    ok(st == 200, "GET /cells with the same token", (st, j))
    listed = {c["id"]: c for c in (j or {}).get("cells", [])}
    want = {c["id"] for c in cells}
    ok(set(listed) == want, "the new server lists exactly the %d cells made before" % len(want),
       (sorted(set(listed) ^ want))[:6])
    bad_timeout = [c["id"] for c in cells
                   if c["id"] in listed and listed[c["id"]]["idle_timeout_s"] != c["idle_timeout_s"]]
    ok(not bad_timeout, "each keeps its idle timeout", bad_timeout[:4])
    wrong = []
    for c in cells:
        st, r = cl.call("POST", "/cells/%s/exec" % c["id"], {"cmd": "cat /testbed/d/mark"})
        if st != 200 or r.get("exit_code") != 0 or r.get("stdout") != c["id"]:
            wrong.append((c["id"], st, r))
    ok(not wrong, "each answers by its id and keeps its files", wrong[:3])
    st, r = cl.call("POST", "/run_code", {"code": "print(6*7)", "language": "python"})
    ok(st == 200 and r.get("status") == "Success" and r["run_result"]["stdout"] == "42\n",
       "/run_code works after the restart", (st, r))


def delete(cl, cells_file):
    cells = json.load(open(cells_file))
    bad = []
    for c in cells:
        st, r = cl.call("DELETE", "/cells/%s" % c["id"])
        if st != 200:
            bad.append((c["id"], st, r))
    ok(not bad, "DELETE of each adopted cell", bad[:3])
    st, j = cl.call("GET", "/cells")
    ok(st == 200 and j["cells"] == [], "none left in GET /cells", (st, j))


def main():
    url, token, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
    cl = Client(url, token)
    args = sys.argv[4:]
    if cmd == "create":
        create(cl, int(args[0]), args[1])
    elif cmd == "load":
        load(cl, args[0], int(args[1]), args[2])
    elif cmd == "verify":
        verify(cl, args[0])
    elif cmd == "delete":
        delete(cl, args[0])
    else:
        sys.exit("unknown subcommand " + cmd)
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
