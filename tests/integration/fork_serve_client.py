#!/usr/bin/python3
"""A client of `sandcell serve` for tests/integration/t_fork_serve.sh
(standard library only): fork, checkpoints and rollback over HTTP. Prints
"ok - ..." / "FAIL - ..." lines and exits 1 when something failed.

  fork_serve_client.py URL TOKEN MAX_CELLS
"""
import json
import sys
import threading
import time
import urllib.error
import urllib.request

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


URL, TOKEN, MAX_CELLS = sys.argv[1], sys.argv[2], int(sys.argv[3])


def req(method, path, body=None, token=TOKEN):
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    r = urllib.request.Request(URL + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=300) as f:
            raw = f.read()
            return f.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw


def sh(cid, cmd):
    st, b = req("POST", "/cells/%s/exec" % cid, {"cmd": cmd})
    if st != 200:
        return None
    return b.get("stdout")


# a file of every byte value, a deleted image file, a link
SETUP = ("mkdir -p /testbed/d && printf 'hello\\n' > /testbed/a && "
         "python3 -c \"import sys; sys.stdout.buffer.write(bytes(range(256))*64)\" > /testbed/d/bin && "
         "ln -s a /testbed/l && echo tmpfile > /tmp/t && chmod 640 /testbed/a")
SUM = "cd /testbed && sha256sum a d/bin /tmp/t && readlink l && stat -c %a a"

st, b = req("POST", "/cells", {})
ok(st == 201, "POST /cells makes the parent", (st, b))
P = b["id"]
ok(sh(P, SETUP) == "", "files are written in the parent")
before = sh(P, SUM)
ok(before and "hello" not in before, "the parent's files have sums", before)

# bad requests
for body, what in (('{"count": 0}', "0"), ('{"count": 101}', "101"), ('{"count": 1.5}', "1.5"),
                   ('{"count": "2"}', "a string"), ('[1]', "a list body"),
                   ('{"count": 1e300}', "1e300"), ('not json', "no JSON")):
    st, b = req("POST", "/cells/%s/fork" % P, body)
    ok(st in (400, 422), "fork with count %s is refused (422)" % what, (st, b))
st, b = req("POST", "/cells/%s-0123456789abcdef/fork" % P.split("-")[0], {"count": 1})
ok(st == 404, "fork of an unknown id: 404", (st, b))
st, b = req("POST", "/cells/%s/fork" % P, {"count": 1}, token="wrong-token")
ok(st == 401, "fork with a wrong token: 401", (st, b))
st, b = req("POST", "/cells/%s/fork" % P, {"count": 1}, token=None)
ok(st == 401, "fork without a token: 401", (st, b))

# fork count=3
st, b = req("POST", "/cells/%s/fork" % P, {"count": 3})
ok(st == 200 and len(b["cells"]) == 3 and all("id" in c for c in b["cells"]),
   "fork count=3 answers three new ids", (st, b))
kids = [c["id"] for c in b["cells"]]
ok(all(k.split("-")[0] == P.split("-")[0] and len(k.split("-")[-1]) == 16 for k in kids),
   "the children's ids are NODE-HEX as POST /cells' are", kids)
st, b = req("GET", "/cells")
ids = {c["id"]: c for c in b["cells"]}
ok(all(k in ids for k in kids) and P in ids, "GET /cells lists the parent and the children", b)
ok(all(ids[k]["idle_timeout_s"] == ids[P]["idle_timeout_s"] for k in kids),
   "the children have the parent's idle timeout")
for i, k in enumerate(kids):
    ok(sh(k, SUM) == before, "child %d has the parent's files byte for byte" % i, sh(k, SUM))
ok(sh(kids[0], "echo mine > /testbed/only0 && rm /testbed/a && echo ok") == "ok\n",
   "a child writes and deletes")
ok(sh(P, "test -e /testbed/only0 || cat /testbed/a") == "hello\n",
   "the parent sees neither the write nor the delete")
ok(sh(kids[1], "test -e /testbed/only0 || cat /testbed/a") == "hello\n",
   "a sibling sees neither either")
ok(sh(P, "echo alive") == "alive\n", "the parent still runs commands")
ok(sh(kids[2], "echo hi") == "hi\n", "another child runs commands")
# the server's spec, not the defaults (t_fork_serve.sh: --hostname fkhost)
ok(sh(kids[2], "hostname") == "fkhost\n", "a child is made with the server's spec",
   sh(kids[2], "hostname"))

# a fork beyond the table: one entry per child, those over the limit say so
st, b = req("GET", "/cells")
n = len(b["cells"])
want = MAX_CELLS - n + 1
st, b = req("POST", "/cells/%s/fork" % kids[1], {"count": want})
made = [c["id"] for c in b.get("cells", []) if "id" in c]
errs = [c["error"] for c in b.get("cells", []) if "error" in c]
ok(st == 200 and len(b["cells"]) == want and len(made) == want - 1 and len(errs) == 1
   and "at most" in errs[0], "children over the server's max cells get an error entry", (st, b))
st, b = req("GET", "/cells")
ok(len(b["cells"]) == MAX_CELLS, "the table is full, not over", len(b["cells"]))
for k in made:
    req("DELETE", "/cells/" + k)

# DELETE the parent: the children stay
st, b = req("DELETE", "/cells/" + P)
ok(st == 200, "DELETE the parent", (st, b))
ok(sh(kids[1], "cat /testbed/a") == "hello\n", "a child still works after the parent is gone")

# checkpoints and rollback on a child
C = kids[1]
st, b = req("POST", "/cells/%s/checkpoints" % C, {"tag": "t1"})
ok(st == 201 and b.get("tag") == "t1", "POST checkpoints with a tag", (st, b))
st, b = req("POST", "/cells/%s/checkpoints" % C, {"tag": "t1"})
ok(st == 409, "the same tag again: 409", (st, b))
st, b = req("POST", "/cells/%s/checkpoints" % C, "")
ok(st == 201 and b.get("tag", "").startswith("ckpt-"), "POST checkpoints without a tag makes one",
   (st, b))
gen = b.get("tag")
for bad in ("../x", "a b", "-x", "x" * 64, ""):
    st, b = req("POST", "/cells/%s/checkpoints" % C, {"tag": bad})
    ok(st == 422, "a bad tag %r is refused" % bad[:10], (st, b))
st, b = req("POST", "/cells/%s/checkpoints" % C, {"tag": 5})
ok(st == 422, "a tag that is no string is refused", (st, b))
st, b = req("GET", "/cells/%s/checkpoints" % C)
ok(st == 200 and b.get("checkpoints") == sorted(["t1", gen]), "GET checkpoints lists both", (st, b))
saved = sh(C, SUM)
ok(sh(C, "echo changed > /testbed/a && rm -r /testbed/d && echo new > /testbed/n && "
       "(sleep 1000 >/dev/null 2>&1 &) && echo ok") == "ok\n", "the child is changed")
st, b = req("POST", "/cells/%s/rollback" % C, {"tag": "nosuch"})
ok(st == 404, "rollback to an unknown tag: 404", (st, b))
st, b = req("POST", "/cells/%s/rollback" % C, {})
ok(st == 422, "rollback without a tag: 422", (st, b))
st, b = req("POST", "/cells/%s/rollback" % C, {"tag": "t1"})
ok(st == 200 and b.get("rolled_back") is True, "rollback to t1", (st, b))
ok(sh(C, SUM) == saved, "rollback restores the files", sh(C, SUM))
ok(sh(C, "test -e /testbed/n && echo there || echo gone") == "gone\n", "a file made later is gone")
ok(sh(C, "ps -e -o comm= | grep -c sleep") == "0\n", "rollback killed the cell's processes")
st, b = req("POST", "/cells/%s/code" % C, {"code": "x = 41\nprint(x + 1)"})
ok(st == 200 and "42" in json.dumps(b), "/code runs after a rollback (a new session)", (st, b))
# a rollback while a request runs on the cell: 409; the parent runs
# commands while its children are made
runner = threading.Thread(target=sh, args=(C, "sleep 60"))
runner.start()
for _ in range(600):  # until the server counts the exec (a slow host: seconds)
    st, b = req("GET", "/cells")
    if st == 200 and any(c["id"] == C and c["busy"] for c in b["cells"]):
        break
    time.sleep(0.1)
st, b = req("POST", "/cells/%s/rollback" % C, {"tag": "t1"})
ok(st == 409 and "requests running" in b.get("detail", ""),
   "a rollback while an exec runs on the cell: 409", (st, b))
sh(C, "pkill -x sleep")  # the runner's exec ends
runner.join()
got = {}
forker = threading.Thread(target=lambda: got.update(r=req("POST", "/cells/%s/fork" % C, {"count": 2})))
forker.start()
ok(sh(C, "echo during") == "during\n", "the cell runs commands while it is forked")
forker.join()
st, b = got["r"]
ok(st == 200 and len([c for c in b["cells"] if "id" in c]) == 2, "that fork made two children",
   (st, b))
for c in b.get("cells", []):
    if "id" in c:
        req("DELETE", "/cells/" + c["id"])

# replay_sessions: the children's /code sessions run the parent's code again
req("POST", "/cells/%s/code" % C, {"code": "y = 6 * 7"})
st, b = req("POST", "/cells/%s/fork" % C, {"count": 1, "replay_sessions": True})
ok(st == 200 and b["cells"][0].get("replay") == {"ok": True, "runs": 2},
   "fork with replay_sessions replays both /code runs", (st, b))
R = b["cells"][0].get("id")
st, b = req("POST", "/cells/%s/code" % R, {"code": "print(x, y)"})
ok(st == 200 and b.get("run_result", {}).get("stdout") == "41 42\n",
   "the replayed child's session has the parent's variables", (st, b))
st, b = req("POST", "/cells/%s/fork" % C, {"count": 1})
P2 = b["cells"][0].get("id")
st, b = req("POST", "/cells/%s/code" % P2, {"code": "print('y' in globals())"})
ok(st == 200 and b.get("run_result", {}).get("stdout") == "False\n",
   "without replay_sessions a child's session is empty", (st, b))
st, b = req("POST", "/cells/%s/fork" % C, {"replay_sessions": "yes"})
ok(st == 422, "replay_sessions must be a boolean", (st, b))
for k in (R, P2):
    req("DELETE", "/cells/" + k)

# a parent made with memory_limit_MB: its children and its rollbacks keep it
BIG = "python3 -c 'b = bytearray(300 << 20); print(len(b) >> 20)' 2>/dev/null; echo rc=$?"
st, b = req("POST", "/cells", {"memory_limit_MB": 100})
ok(st == 201, "POST /cells with memory_limit_MB 100", (st, b))
M = b["id"]
ok(sh(M, BIG) not in (None, "300\nrc=0\n"), "it cannot take 300 MiB", sh(M, BIG))
ok(sh(C, BIG) == "300\nrc=0\n", "a cell without the limit can", sh(C, BIG))
st, b = req("POST", "/cells/%s/fork" % M, {"count": 1})
MK = b["cells"][0].get("id") if st == 200 else None
ok(MK and sh(MK, BIG) not in (None, "300\nrc=0\n"), "its child cannot either", (st, b))
req("POST", "/cells/%s/checkpoints" % M, {"tag": "m"})
st, b = req("POST", "/cells/%s/rollback" % M, {"tag": "m"})
ok(st == 200 and sh(M, BIG) not in (None, "300\nrc=0\n"),
   "nor the cell after a rollback", (st, b, sh(M, BIG)))
for k in (M, MK):
    req("DELETE", "/cells/%s" % k)

st, b = req("DELETE", "/cells/%s/checkpoints/%s" % (C, gen))
ok(st == 200 and b.get("deleted") is True, "DELETE a checkpoint", (st, b))
st, b = req("GET", "/cells/%s/checkpoints" % C)
ok(st == 200 and b.get("checkpoints") == ["t1"], "it is gone from the list", (st, b))
st, b = req("DELETE", "/cells/%s/checkpoints/%s" % (C, gen))
ok(st == 404, "DELETE it again: 404", (st, b))
st, b = req("DELETE", "/cells/%s/checkpoints/bad%%20tag!" % C)
ok(st in (400, 404, 422), "DELETE a bad tag is refused", (st, b))
st, b = req("GET", "/cells/%s-0123456789abcdef/checkpoints" % C.split("-")[0])
ok(st == 404, "checkpoints of an unknown id: 404", (st, b))
st, b = req("POST", "/cells/%s-0123456789abcdef/rollback" % C.split("-")[0], {"tag": "t1"})
ok(st == 404, "rollback of an unknown id: 404", (st, b))
st, b = req("GET", "/cells/%s/checkpoints" % C, token="nope")
ok(st == 401, "checkpoints with a wrong token: 401", (st, b))

for k in kids:
    req("DELETE", "/cells/" + k)
st, b = req("GET", "/cells")
ok(st == 200 and b["cells"] == [], "no cell is left in the table", b)
sys.exit(1 if FAILS else 0)
