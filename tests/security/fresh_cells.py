"""Drives `sandcell serve` for t_fresh_cells.sh (issue #39): the record
(cell_recorder.py) of a cell a server hands out after a hostile program
(cell_hostile.py) ran in the one before must equal a fresh cell's.
Standard library only.

usage: fresh_cells.py URL TOKEN_FILE DIR COMMAND
  record-run-code OUT      the recorder through POST /run_code
  hostile-run-code OUT     the hostile program through POST /run_code (its
                           own record of its cell into OUT)
  record-cell OUT          POST /cells, the recorder by exec, DELETE
  hostile-cell OUT         POST /cells, the hostile program by exec, DELETE
  same A B                 exit 0 when the records are equal, else print
                           where they differ and exit 1
  differs A B PART         exit 0 when PART of the records differs"""
import base64
import json
import os
import subprocess
import sys
import urllib.request

HERE = sys.argv[3] if len(sys.argv) > 3 else "."


def call(url, token, method, path, body=None, raw=None):
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    kind = "application/octet-stream" if raw is not None else "application/json"
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": kind})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def source(name):
    """A program's text; the hostile one's daemons named $HOSTILE_TAG, so
    that a test looks for its own only (another may run beside it)."""
    with open("%s/%s" % (HERE, name)) as f:
        text = f.read()
    tag = os.environ.get("HOSTILE_TAG", "")
    return text.replace('b"sc-hostile"', repr(tag.encode())) if tag else text


def last_json_line(stdout, what):
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit("%s printed no record; stdout: %.500r" % (what, stdout))
    return json.loads(lines[-1])


def run_code(url, token, name, with_recorder):
    body = {"code": source(name), "language": "python", "run_timeout": 60}
    if with_recorder:
        body["files"] = {"cell_recorder.py":
                         base64.b64encode(source("cell_recorder.py").encode()).decode()}
    answer = call(url, token, "POST", "/run_code", body)
    run = answer.get("run_result") or {}
    if run.get("return_code") != 0:
        sys.exit("%s through /run_code: %.2000r" % (name, answer))
    return last_json_line(run.get("stdout", ""), name)


def in_cell(url, token, name, with_recorder):
    cell = call(url, token, "POST", "/cells", {})
    cid = cell["id"]
    try:
        if with_recorder:
            call(url, token, "PUT", "/cells/%s/files?path=cell_recorder.py" % cid,
                 raw=source("cell_recorder.py").encode())
        r = call(url, token, "POST", "/cells/%s/exec" % cid,
                 {"argv": ["python3", "-c", source(name)], "timeout": 60})
        if r.get("exit_code", r.get("return_code")) != 0:
            sys.exit("%s by exec: %.2000r" % (name, r))
        tag = os.environ.get("HOSTILE_TAG")
        if with_recorder and tag and subprocess.run(["pgrep", "-x", tag]).returncode != 0:
            sys.exit("the control: no daemon %s seen on the host while its cell lives" % tag)
        return last_json_line(r.get("stdout", ""), name)
    finally:
        call(url, token, "DELETE", "/cells/" + cid)


def diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            yield from diff(a.get(k), b.get(k), path + "/" + k)
    elif a != b:
        yield "%s: %.300s != %.300s" % (path, json.dumps(a), json.dumps(b))


def main():
    url, token_file, cmd = sys.argv[1], sys.argv[2], sys.argv[4]
    with open(token_file) as f:
        token = f.read().strip()
    args = sys.argv[5:]
    if cmd in ("same", "differs"):
        with open(args[0]) as f:
            a = json.load(f)
        with open(args[1]) as f:
            b = json.load(f)
        if cmd == "differs":
            sys.exit(0 if a.get(args[2]) != b.get(args[2]) else 1)
        lines = list(diff(a, b))
        for line in lines[:40]:
            print(line)
        sys.exit(1 if lines else 0)
    if cmd == "record-run-code":
        rec = run_code(url, token, "cell_recorder.py", False)
    elif cmd == "hostile-run-code":
        rec = run_code(url, token, "cell_hostile.py", True)
    elif cmd == "record-cell":
        rec = in_cell(url, token, "cell_recorder.py", False)
    elif cmd == "hostile-cell":
        rec = in_cell(url, token, "cell_hostile.py", True)
    else:
        sys.exit("unknown command " + cmd)
    with open(args[0], "w") as f:
        json.dump(rec, f, sort_keys=True)


main()
