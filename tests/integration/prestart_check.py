"""t_prestart.sh's client: the same program through /run_code of a server
started with --prestart (PRE) and of one without it (FRESH) must give the same answer: what a fresh
`python3 main.py` gives. Standard library only.

usage: prestart_check.py PRE_URL FRESH_URL TOKEN_FILE PROBE
       prestart_check.py PRE_URL FRESH_URL TOKEN_FILE metric URL N
         (sandcell_run_code_prestarted_total of the server at URL is N)"""
import json
import sys
import urllib.request

IDENTITY = r'''
import os, resource, signal, sys
out = {
    "name": __name__, "file": __file__, "argv": sys.argv, "orig_argv": sys.orig_argv,
    "path": sys.path, "globals": list(globals()), "spec": repr(__spec__),
    "package": __package__, "cached": __cached__,
    "loader": (type(__loader__).__name__, __loader__.name, __loader__.path),
    "modules": sorted(sys.modules), "cwd": os.getcwd(),
    "env": sorted(k if k in ("SANDCELL_PLOTS", "TRACEPARENT") else "%s=%s" % (k, v)
                  for k, v in os.environ.items()),
    "flags": repr(sys.flags), "ppid": os.getppid(), "leader": os.getsid(0) == os.getpid(),
    "pgrp": os.getpgrp() == os.getpid(),
    "stdio": [(f.name, f.mode, f.encoding, f.errors, f.line_buffering, f.write_through,
               f.isatty(), type(f.buffer).__name__) for f in (sys.stdin, sys.stdout, sys.stderr)],
    "limits": [resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource))
               if n.startswith("RLIMIT_")],
    "umask": os.umask(0o22),
    "signals": [repr(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGPIPE,
                                                     signal.SIGTERM, signal.SIGCHLD)],
    "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "recursion": sys.getrecursionlimit(), "dont_write_bytecode": sys.dont_write_bytecode,
    "meta_path": [type(f).__name__ for f in sys.meta_path],
}
print(__import__("json").dumps(out, sort_keys=True))
'''

PROBES = {
    "identity": {"code": IDENTITY},
    "traceback": {"code": "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)\n"},
    "syntax_error": {"code": "x = (\nprint(1)\n"},
    "exit_code": {"code": "import sys\nprint('out')\nsys.exit(7)\n"},
    "exit_message": {"code": "import sys\nsys.exit('bye now')\n"},
    "keyboard_interrupt": {"code": "raise KeyboardInterrupt\n"},
    "killed": {"code": "import os, signal\nprint('x', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n"},
    "stdin": {"code": "import sys\nprint(repr(sys.stdin.read()))\n", "stdin": "hello\nworld"},
    "unclosed_file": {"code": "f = open('out.txt', 'w')\nf.write('x' * 100000 + 'end')\n",
                      "fetch_files": ["out.txt"]},
    "shutdown_order": {"code": (
        "import atexit, threading, time\n"
        "class A:\n    def __del__(self):\n        print('del')\n"
        "a = A()\n"
        "atexit.register(print, 'atexit')\n"
        "def late():\n    time.sleep(0.3)\n    print('thread')\n"
        "threading.Thread(target=late).start()\n"
        "print('main')\n")},
    "timeout": {"code": "import time\nprint('start', flush=True)\ntime.sleep(30)\n",
                "run_timeout": 1},
    "imports_work": {"code": "import json, socket, ctypes, types\n"
                             "print(json.dumps([1]), socket.AF_UNIX, types.__name__)\n"},
}


def run(url, token, body):
    req = urllib.request.Request(url + "/run_code", data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        a = json.loads(r.read())
    run_result = a.get("run_result") or {}
    return {k: run_result.get(k) for k in ("status", "return_code", "stdout", "stderr")} | \
        {"files": a.get("files"), "status": a.get("status")}


def metric(url, token, name):
    req = urllib.request.Request(url + "/metrics", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    return None


def main():
    pre, fresh, token_file, probe = sys.argv[1:5]
    with open(token_file) as f:
        token = f.read().strip()
    if probe == "metric":
        got = metric(sys.argv[5], token, "sandcell_run_code_prestarted_total")
        if got != int(sys.argv[6]):
            sys.exit("prestarted runs: %r, expected %s" % (got, sys.argv[6]))
        return
    if probe == "cell_processes":
        # POST /cells: a pool cell whose interpreter was ended
        H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        def call(method, path, body=None):
            req = urllib.request.Request(pre + path, method=method, headers=H,
                                         data=json.dumps(body).encode() if body else None)
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"null")
        cid = call("POST", "/cells", {})["id"]
        listing = ("import os\nprint(sorted(open('/proc/%s/comm' % p).read().strip() "
                   "for p in os.listdir('/proc') if p.isdigit()))")
        out = call("POST", "/cells/%s/exec" % cid, {"argv": ["python3", "-c", listing]})
        call("DELETE", "/cells/" + cid)
        if out.get("stdout") != "['python3', 'sandcell']\n":
            sys.exit("the cell's processes: %r" % out)
        return
    if probe == "random":
        body = {"code": "import random\nprint(random.random())\n"}
        a, b = run(pre, token, body)["stdout"], run(pre, token, body)["stdout"]
        if a == b:
            sys.exit("two runs drew the same random number: %r" % a)
        return
    body = PROBES[probe]
    a, b = run(pre, token, body), run(fresh, token, body)
    if a != b:
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print("%s:\n  pre-started: %.1500r\n  fresh:       %.1500r" % (k, a.get(k), b.get(k)))
        sys.exit(1)


main()
