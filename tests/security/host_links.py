"""The host-links probe over the HTTP API and MCP (t_host_links.sh).

A cell plants symlinks through magic links (/proc/self/fd/N/.., /proc/1/root,
/proc/self/cwd, /proc/self/root) and every file path of the API and of MCP
is driven through them: nothing of the host may be read or written.

usage: host_links.py api URL TOKEN HOSTDIR SECRET
       host_links.py mcp SANDCELL HOSTDIR SECRET
Prints "ok - ..." / "FAIL - ..." lines; exits 1 on any failure.
"""
import io
import json
import os
import subprocess
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

# the integration suite's ok() and its failure count
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import serve_client  # noqa: E402
ok = serve_client.ok


def links():
    """name -> target: the links a hostile cell plants in /testbed."""
    up = "/.." * 24
    out = {"fd%d" % n: "/proc/self/fd/%d%s" % (n, up) for n in range(3, 21)}
    out["p1root"] = "/proc/1/root"
    out["cwd"] = "/proc/self/cwd" + up
    out["selfroot"] = "/proc/self/root"
    return out


PLANT = "mkdir -p /testbed && cd /testbed && " + " && ".join(
    "ln -sfn %s %s" % (t, n) for n, t in links().items())


def host_clean(hostdir, what):
    ok(os.listdir(os.path.join(hostdir, "w")) == [], what + ": nothing written on the host",
       os.listdir(os.path.join(hostdir, "w")))


def api(url, token, hostdir, secret):
    def req(method, path, body=None, ctype="application/json"):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        r = urllib.request.Request(url + path, data=data, method=method)
        r.add_header("Authorization", "Bearer " + token)
        if data is not None:
            r.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(r, timeout=120) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    st, body = req("POST", "/cells", {})
    ok(st in (200, 201), "POST /cells", body)
    cid = json.loads(body)["id"]
    st, body = req("POST", "/cells/%s/exec" % cid, {"cmd": PLANT})
    ok(st == 200 and json.loads(body)["exit_code"] == 0, "the cell plants its links", body)
    q = urllib.parse.quote
    for name in links():
        via = "/testbed/%s%s" % (name, hostdir)
        st, body = req("GET", "/cells/%s/files?path=%s" % (cid, q(via + "/secret")))
        ok(secret.encode() not in body, "API GET file through %s" % name, (st, body[:200]))
        st, body = req("GET", "/cells/%s/files?path=%s" % (cid, q(via)))
        ok(secret.encode() not in body, "API GET directory (tar) through %s" % name, (st, body[:200]))
        st, body = req("PUT", "/cells/%s/files?path=%s" % (cid, q(via + "/w/api-file")),
                       b"written", "application/octet-stream")
        tbuf = io.BytesIO()
        with tarfile.open(fileobj=tbuf, mode="w") as t:
            info = tarfile.TarInfo("api-tar")
            info.size = 7
            t.addfile(info, io.BytesIO(b"written"))
        st, body = req("PUT", "/cells/%s/files?path=%s" % (cid, q(via + "/w")), tbuf.getvalue(),
                       "application/x-tar")
        host_clean(hostdir, "API PUT file and tar through %s" % name)
        st, body = req("POST", "/cells/%s/exec" % cid,
                       {"argv": ["cat", "." + hostdir + "/secret"], "cwd": "/testbed/" + name})
        ok(secret.encode() not in body, "API exec with cwd %s" % name, body[:200])
    st, body = req("DELETE", "/cells/%s" % cid)
    ok(st == 200, "DELETE the cell", body)


def mcp(sandcell, hostdir, secret):
    p = subprocess.Popen([sandcell, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    seq = [0]

    def call(method, params):
        seq[0] += 1
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": seq[0], "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    def tool(name, args):
        return call("tools/call", {"name": name, "arguments": args})

    call("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}})
    r = tool("create_session", {})
    sid = json.loads(r["result"]["content"][0]["text"])["session_id"]
    r = tool("run_command", {"session_id": sid, "command": PLANT})
    ok(not r["result"].get("isError"), "MCP: the cell plants its links", r)
    for name in links():
        via = "/testbed/%s%s" % (name, hostdir)
        r = tool("read_file", {"session_id": sid, "path": via + "/secret"})
        ok(secret not in json.dumps(r), "MCP read_file through %s" % name, r)
        tool("write_file", {"session_id": sid, "path": via + "/w/mcp-file", "content": "written"})
        host_clean(hostdir, "MCP write_file through %s" % name)
    tool("close_session", {"session_id": sid})
    p.stdin.close()
    p.wait(timeout=60)


def main():
    if sys.argv[1] == "api":
        api(*sys.argv[2:6])
    else:
        mcp(*sys.argv[2:5])
    sys.exit(1 if serve_client.FAILS else 0)


if __name__ == "__main__":
    main()
