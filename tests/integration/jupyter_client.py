"""POST /run_jupyter against a real `sandcell serve` (t_jupyter.sh): the
SandboxFusion RunJupyterRequest/Response shapes, written from their
documented models. Usage: jupyter_client.py URL TOKEN CHECK [--plots]
(one check per call; exit 0 when it holds, else the answer on stderr)."""
import base64
import json
import sys
import urllib.error
import urllib.request

URL, TOKEN, CHECK = sys.argv[1], sys.argv[2], sys.argv[3]
PNG = b"\x89PNG\r\n\x1a\n"


def post(body, token=TOKEN, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    hdr = {"Content-Type": "application/json"}
    if token:
        hdr["Authorization"] = "Bearer " + token
    req = urllib.request.Request(URL + "/run_jupyter", data, hdr)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def run(cells, **kw):
    kw["cells"] = cells
    code, d = post(kw)
    assert code == 200, (code, d)
    # the response model's members, every one
    for k in ("status", "message", "driver", "cells", "executor_pod_name", "files"):
        assert k in d, (k, d)
    for c in d["cells"]:
        assert set(c) == {"stdout", "stderr", "display", "error"}, c
    return d


def check_print():
    d = run(["print(123)"])
    assert d["status"] == "Success" and d["message"] == "", d
    assert d["driver"]["status"] == "Finished" and d["driver"]["return_code"] == 0, d
    assert d["cells"] == [{"stdout": "123\n", "stderr": "", "display": [], "error": []}], d


def check_state():
    d = run(['a = "hello"', "a", "print(a)", "b = 2\nb * 21", "None"])
    c = d["cells"]
    assert len(c) == 5, d
    assert c[0] == {"stdout": "", "stderr": "", "display": [], "error": []}, c[0]
    assert c[1]["stdout"] == "" and c[1]["display"] == [{"text/plain": "'hello'"}], c[1]
    assert c[2]["stdout"] == "hello\n", c[2]
    assert c[3]["display"] == [{"text/plain": "42"}], c[3]
    assert c[4]["display"] == [], c[4]


def check_error():
    d = run(['a = "hello"', 'import sys\nsys.stderr.write("This is an error message\\n")',
             "def f():\n    assert False, 'nope'\nf()", "print(a)", "raise ValueError('boom')",
             "def g(:\n  pass"])
    c = d["cells"]
    assert d["status"] == "Success", d  # a cell's exception is the cell's, as in a kernel
    assert c[1]["stderr"] == "This is an error message\n", c[1]
    assert c[1]["display"] == [{"text/plain": "25"}], c[1]  # write()'s value, as Jupyter shows it
    e = c[2]["error"]
    assert len(e) == 1 and e[0]["ename"] == "AssertionError" and e[0]["evalue"] == "nope", e
    tb = e[0]["traceback"]
    assert isinstance(tb, list) and all(isinstance(s, str) for s in tb), tb
    assert any("<cell-3>" in s for s in tb) and not any("sc_jupyter" in s for s in tb), tb
    assert c[2]["stderr"] == "" and c[2]["stdout"] == "", c[2]
    assert c[3]["stdout"] == "hello\n" and c[3]["error"] == [], c[3]
    assert c[4]["error"][0]["ename"] == "ValueError" and c[4]["error"][0]["evalue"] == "boom", c[4]
    assert c[5]["error"][0]["ename"] == "SyntaxError", c[5]


def check_display():
    d = run(["class H:\n    def _repr_html_(self):\n        return '<b>hi</b>'\n"
             "    def __repr__(self):\n        return 'H()'\n",
             "display(H(), 7)\nprint('between')\nH()"])
    c = d["cells"][1]
    assert c["stdout"] == "between\n", c
    assert c["display"] == [{"text/plain": "H()", "text/html": "<b>hi</b>"}, {"text/plain": "7"},
                            {"text/plain": "H()", "text/html": "<b>hi</b>"}], c


def check_plot():
    d = run(["import matplotlib.pyplot as plt",
             "x = [1, 2, 3, 4, 5]\ny = [2, 3, 5, 7, 11]\nplt.plot(x, y)\nplt.title('Simple Plot')\n"
             "plt.show()", "print('after')"])
    c = d["cells"]
    assert d["status"] == "Success", d
    assert len(c[1]["display"]) == 1 and "image/png" in c[1]["display"][0], c[1]
    assert base64.b64decode(c[1]["display"][0]["image/png"])[:8] == PNG
    assert c[2]["display"] == [] and c[2]["stdout"] == "after\n", c[2]  # each cell its own plots


def check_cell_timeout():
    d = run(["x = 1", "import time\nwhile True:\n    time.sleep(0.05)", "print(x)"], cell_timeout=5)
    assert d["status"] == "Failed", d
    assert d["driver"]["status"] == "TimeLimitExceeded", d
    assert "cell_timeout" in d["driver"]["stderr"], d
    c = d["cells"]
    assert len(c) == 2 and c[1]["error"][0]["ename"] == "KeyboardInterrupt", c


def check_total_timeout():
    d = run(["print('first')", "import time\ntime.sleep(60)", "print('never')"], total_timeout=10)
    assert d["status"] == "Failed" and d["driver"]["status"] == "TimeLimitExceeded", d
    assert "total_timeout" in d["driver"]["stderr"], d
    assert d["cells"][0]["stdout"] == "first\n" and len(d["cells"]) == 2, d
    assert d["driver"]["execution_time"] < 50, d


def check_files():
    files = {"data/in.txt": base64.b64encode(b"abc").decode(), "top.bin": base64.b64encode(b"\0\1").decode()}
    d = run(["print(open('data/in.txt').read())", "import os\nos.makedirs('out', exist_ok=True)\n"
             "open('out/r.txt', 'w').write('result')", "print(os.getcwd())"],
            files=files, fetch_files=["out/r.txt", "top.bin", "missing.txt"])
    c = d["cells"]
    assert c[0]["stdout"] == "abc\n" and c[2]["stdout"] == "/testbed\n", c
    assert d["files"] == {"out/r.txt": base64.b64encode(b"result").decode(),
                          "top.bin": base64.b64encode(b"\0\1").decode()}, d["files"]


def check_memory():
    d = run(["x = 1", "b = bytearray(1024 * 1024 * 1024)\nb[::4096] = b'1' * len(b[::4096])", "print(x)"],
            memory_limit_MB=128)
    if d["status"] == "SandboxError":  # the host cannot set it: said so, nothing ran
        assert "memory_limit_MB" in d["message"] and d["cells"] == [], d
        return
    c = d["cells"]
    assert len(c) >= 2 and c[1]["error"], d
    assert c[1]["error"][0]["ename"] in ("MemoryError", "DeadKernelError"), c[1]
    if c[1]["error"][0]["ename"] == "DeadKernelError":
        assert d["status"] == "Failed" and len(c) == 2, d


def check_refused():
    for body, field in (({"cells": "print(1)"}, "cells"), ({}, "cells"), ({"cells": [1]}, "cells"),
                        ({"cells": [], "kernel": "julia"}, "kernel"),
                        ({"cells": [], "fetch_files": ["../../etc/passwd"]}, "fetch_files"),
                        ({"cells": [], "cell_timeout": "1"}, "cell_timeout")):
        code, d = post(body)
        assert code == 422 and field in d, (body, code, d)
    code, d = post(None, raw=b"{not json")
    assert code in (400, 422), (code, d)
    code, d = post({"cells": ["print(1)"]}, token="")
    assert code == 401, (code, d)
    d = run([])
    assert d["status"] == "Success" and d["cells"] == [], d


def check_unicode():
    d = run(["print('h\u00e9llo \u2603')", "import sys\nsys.stdout.buffer.write(b'\\xff\\n')"])
    c = d["cells"]
    assert c[0]["stdout"] == "h\u00e9llo \u2603\n", c[0]
    assert c[1]["stdout"].endswith("\n") and len(c[1]["stdout"]) == 2, c[1]


CHECKS = {k[6:]: v for k, v in globals().items() if k.startswith("check_")}
try:
    CHECKS[CHECK]()
except AssertionError as e:
    print("%s: %s" % (CHECK, str(e)[:3000]), file=sys.stderr)
    sys.exit(1)
