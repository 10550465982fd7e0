#!/usr/bin/env python3
"""t_nginx's client: sandcell serve x3 behind nginx (docs/nginx-sandcell.conf).

  nginx_check.py spread NGINX_URL TOKEN STATE NODE=URL...
      cells and /run_code through nginx land on every server, every request
      for a cell reaches its owner, the E2b-Sandbox-Id header routes the
      same way; the cells made go to STATE (JSON)
  nginx_check.py down NGINX_URL TOKEN STATE DOWN_NODE NODE=URL...
      with DOWN_NODE stopped: its cells get a 502 naming it, the others'
      go on, new cells and /run_code land on the others; then every cell
      left is deleted through nginx
Prints one "ok"/"FAIL" line per check; exits 1 when one failed.
"""
import http.client
import json
import sys
import threading
import urllib.parse

FAILS = 0


def check(desc, cond, info=None):
    global FAILS
    if cond:
        print("ok   - " + desc)
    else:
        FAILS += 1
        print("FAIL - %s: %s" % (desc, repr(info)[:600]))
    return cond


def request(url, token, method, path, body=None, headers=None, raw=False):
    """(status, headers (lower-case names), JSON or bytes)"""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = {"Authorization": "Bearer " + token}
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()
    if not raw:
        try:
            data = json.loads(data)
        except ValueError:
            pass
    return r.status, hdrs, data


def node_of(cid):
    return cid[:-17]


def spread(ngx, token, state, nodes):
    # new cells: spread over every server, each id naming the one that made it
    cells = []
    for _ in range(12):
        st, h, got = request(ngx, token, "POST", "/cells", {})
        if not check("POST /cells through nginx: 201", st == 201 and "id" in got, (st, got)):
            return
        cells.append(got["id"])
        check("... the id %s names the server that answered" % got["id"],
              node_of(got["id"]) == h.get("x-sandcell-node"), (got["id"], h.get("x-sandcell-node")))
    per = {n: [c for c in cells if node_of(c) == n] for n in nodes}
    check("12 new cells landed on all three servers (%s)" % {n: len(v) for n, v in per.items()},
          all(per.values()) and sum(map(len, per.values())) == 12, cells)
    for n, url in nodes.items():
        st, _, got = request(url, token, "GET", "/cells")
        have = sorted(c["id"] for c in got.get("cells", [])) if st == 200 else None
        check("server %s's own GET /cells lists exactly its %d" % (n, len(per[n])), have == sorted(per[n]),
              (have, per[n]))
    with open(state, "w") as f:
        json.dump(cells, f)

    # every request for a cell reaches its owner
    bad = []
    for cid in cells:
        path = urllib.parse.quote("/testbed/who")
        st, h, got = request(ngx, token, "PUT", "/cells/%s/files?path=%s" % (cid, path), cid.encode())
        if st != 200 or h.get("x-sandcell-node") != node_of(cid):
            bad.append(("PUT", cid, st, got, h.get("x-sandcell-node")))
        st, h, got = request(ngx, token, "POST", "/cells/%s/exec" % cid,
                             {"cmd": "cat /testbed/who"})
        if st != 200 or not isinstance(got, dict) or got.get("stdout") != cid or \
                h.get("x-sandcell-node") != node_of(cid):
            bad.append(("exec", cid, st, got, h.get("x-sandcell-node")))
        st, h, got = request(ngx, token, "GET", "/cells/%s/files?path=%s" % (cid, path), raw=True)
        if st != 200 or got != cid.encode():
            bad.append(("GET", cid, st, got))
    check("PUT, exec and GET of all 12 cells through nginx reach each one's owner", not bad, bad)

    # a server asked directly for another's cell says whose it is
    some = cells[0]
    other = next(n for n in nodes if n != node_of(some))
    st, _, got = request(nodes[other], token, "POST", "/cells/%s/exec" % some, {"cmd": "true"})
    check("a server asked for another node's cell: 421 naming the owner", st == 421 and
          ("'%s'" % node_of(some)) in got.get("detail", ""), (st, got))

    # E2B's header routes by the same rule (GET /cells, which has no id of its own)
    for cid in (per[n][0] for n in nodes):
        seen = set()
        for _ in range(4):
            st, h, got = request(ngx, token, "GET", "/cells", headers={"E2b-Sandbox-Id": cid})
            seen.add((st, h.get("x-sandcell-node"), cid in [c["id"] for c in got.get("cells", [])]))
        check("E2b-Sandbox-Id: %s goes to its node, every time" % cid, seen == {(200, node_of(cid), True)}, seen)

    # and so does the host name of E2B's sandbox addresses, PORT-ID.DOMAIN
    for cid in (per[n][-1] for n in nodes):
        st, h, got = request(ngx, token, "GET", "/cells", headers={"Host": "49983-%s.sandbox.test" % cid})
        check("Host: 49983-%s.sandbox.test goes to its node" % cid, st == 200 and
              h.get("x-sandcell-node") == node_of(cid) and cid in [c["id"] for c in got.get("cells", [])],
              (st, h.get("x-sandcell-node"), got))

    # an id of a node nginx does not know
    st, h, got = request(ngx, token, "POST", "/cells/nowhere-0123456789abcdef/exec", {"cmd": "true"})
    check("an id of a node that is not behind nginx: 404 naming it", st == 404 and
          "'nowhere'" in got.get("detail", "") and "x-sandcell-node" not in h, (st, got, h))

    # /run_code is spread too
    answered = run_codes(ngx, token, 12)
    check("12 /run_code through nginx: all Success, from all three servers (%s)" % answered,
          set(answered) == set(nodes) and "failed" not in answered, answered)


def e2b_sandboxes(ngx, token):
    """E2B's control plane names a sandbox in its path (/sandboxes/{id},
    /v2/sandboxes/{id}/connect): those reach its server too."""
    bad, ids = [], []
    for _ in range(6):
        st, h, got = request(ngx, token, "POST", "/sandboxes", {"templateID": "base", "timeout": 300})
        if st not in (200, 201) or not isinstance(got, dict) or "sandboxID" not in got:
            bad.append(("create", st, got))
            continue
        ids.append(got["sandboxID"])
    for sid in ids:
        for method, path, body in (("GET", "/sandboxes/%s" % sid, None),
                                   ("POST", "/v2/sandboxes/%s/connect" % sid, {"timeout": 300}),
                                   ("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 300})):
            st, h, got = request(ngx, token, method, path, body)
            if st >= 300 or h.get("x-sandcell-node") != node_of(sid):
                bad.append((method, path, st, got, h.get("x-sandcell-node")))
        st, h, got = request(ngx, token, "DELETE", "/sandboxes/%s" % sid)
        if st >= 300 or h.get("x-sandcell-node") != node_of(sid):
            bad.append(("DELETE", sid, st, got))
    check("E2B sandboxes made through nginx are reached by id in the path, and killed (%d)" % len(ids),
          len(ids) == 6 and not bad, bad)


def run_codes(ngx, token, n):
    """n /run_code print(1) on 4 threads: {node: count} (and "failed": count)"""
    out, lock = {}, threading.Lock()

    def one(_):
        st, h, got = request(ngx, token, "POST", "/run_code", {"code": "print(1)", "language": "python"})
        ok = st == 200 and got.get("status") == "Success" and got["run_result"]["stdout"] == "1\n"
        k = h.get("x-sandcell-node") if ok else "failed"
        with lock:
            out[k] = out.get(k, 0) + 1
            if not ok:
                print("# run_code failed: %s %r" % (st, got))

    ts = []
    for i in range(4):
        t = threading.Thread(target=lambda i=i: [one(j) for j in range(i, n, 4)])
        t.start()
        ts.append(t)
    for t in ts:
        t.join()
    return out


def down(ngx, token, state, gone, nodes):
    with open(state) as f:
        cells = json.load(f)
    live = [c for c in cells if node_of(c) != gone]
    for cid in (c for c in cells if node_of(c) == gone):
        st, _, got = request(ngx, token, "POST", "/cells/%s/exec" % cid, {"cmd": "true"})
        check("%s's cell %s: 502 naming the node" % (gone, cid),
              st == 502 and ("'%s'" % gone) in got.get("detail", ""), (st, got))
    bad = []
    for cid in live:
        st, h, got = request(ngx, token, "POST", "/cells/%s/exec" % cid, {"cmd": "cat /testbed/who"})
        if st != 200 or got.get("stdout") != cid or h.get("x-sandcell-node") != node_of(cid):
            bad.append((cid, st, got))
    check("the other %d cells go on working through nginx" % len(live), not bad, bad)
    answered = run_codes(ngx, token, 8)
    check("8 /run_code with %s stopped: all Success, on the others (%s)" % (gone, answered),
          "failed" not in answered and gone not in answered and sum(answered.values()) == 8, answered)
    more = []
    for _ in range(4):
        st, _, got = request(ngx, token, "POST", "/cells", {})
        more.append(got.get("id", "") if st == 201 else "")
    check("4 new cells with %s stopped: made on the others" % gone,
          all(c and node_of(c) != gone and node_of(c) in nodes for c in more), more)
    bad = []
    for cid in live + [c for c in more if c]:
        st, _, got = request(ngx, token, "DELETE", "/cells/%s" % cid)
        if st != 200 or got.get("deleted") is not True:
            bad.append((cid, st, got))
    check("every live cell deleted through nginx", not bad, bad)
    for n, url in nodes.items():
        if n == gone:
            continue
        st, _, got = request(url, token, "GET", "/cells")
        check("server %s lists no cell" % n, st == 200 and got.get("cells") == [], (st, got))


def main():
    cmd, ngx, token, state = sys.argv[1:5]
    rest = sys.argv[5:]
    if cmd == "down":
        gone, rest = rest[0], rest[1:]
    nodes = dict(a.split("=", 1) for a in rest)
    if cmd == "spread":
        spread(ngx, token, state, nodes)
        e2b_sandboxes(ngx, token)
    else:
        down(ngx, token, state, gone, nodes)
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
