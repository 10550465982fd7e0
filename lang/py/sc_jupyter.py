# sandcell: notebook cells as a Jupyter kernel runs them, inside a kept
# session (driver.py). Standard library only; written into the cell by
# lang/notebook.c, never run on the host.
#
# Each cell comes as one session run of
#     __import__('sc_jupyter').run(N, 'HEX', globals())
# (the cell's source, UTF-8 as hex: no quoting to get wrong). The cell runs
# in the session's namespace; the value of its last expression and what it
# passes to display() are its display data (a dict MIME type -> string, as
# Jupyter's execute_result and display_data), an exception is its error
# (ename, evalue, traceback), written as JSON to DIR/rec-N.json for the
# host to read. stdout and stderr are the run's own. Plots (matplotlib,
# plotly) come through sc_backend as in every session run.
import ast
import base64
import json
import linecache
import os
import sys
import traceback

DIR = "/tmp/.sandcell/nb"

# IPython's _repr_*_ methods (what a kernel's formatter asks for), in order
_REPRS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
)

_shown = None  # the running cell's display list


def _shell():
    """IPython's shell when the session runs under it, else None."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return None
    try:
        return ip.get_ipython()
    except Exception:
        return None


def _data(value):
    """value's display data: text/plain always, then its rich reprs."""
    sh = _shell()
    if sh is not None:
        try:
            data, _ = sh.display_formatter.format(value)
            if data:
                return data
        except Exception:
            pass
    data = {"text/plain": repr(value)}
    if isinstance(value, type):
        return data
    for meth, mime in _REPRS:
        f = getattr(value, meth, None)
        if not callable(f):
            continue
        try:
            r = f()
        except Exception:
            continue
        if isinstance(r, tuple):  # (data, metadata)
            r = r[0]
        if r is None:
            continue
        if isinstance(r, (bytes, bytearray)):
            r = base64.b64encode(bytes(r)).decode("ascii")
        elif mime == "application/json":
            r = r if isinstance(r, (dict, list)) else str(r)
        else:
            r = str(r)
        data[mime] = r
    return data


def display(*objs, raw=False, **_):
    """IPython's display(): each object's display data into the cell's."""
    for o in objs:
        if _shown is None:
            print(repr(o))
        elif raw and isinstance(o, dict):
            _shown.append({str(k): v for k, v in o.items()})
        else:
            _shown.append(_data(o))


def _error(et, ev, tb):
    if issubclass(et, SyntaxError):
        lines = traceback.format_exception_only(et, ev)
    else:
        lines = traceback.format_exception(et, ev, tb)
    return {"ename": et.__name__, "evalue": str(ev), "traceback": [s.rstrip("\n") for s in lines]}


def _run(code, fname, ns, rec):
    sh = _shell()
    if sh is not None:
        code = sh.transform_cell(code)  # magics, as the kernel has them
    tree = ast.parse(code, fname, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, fname, "exec"), ns)
    if last is not None:
        value = eval(compile(last, fname, "eval"), ns)
        if value is not None:
            ns["_"] = value
            rec["display"].append(_data(value))


def _write(n, rec):
    os.makedirs(DIR, mode=0o700, exist_ok=True)
    tmp = os.path.join(DIR, "rec-%d.json.tmp" % n)
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(rec, f, default=str)
    os.rename(tmp, os.path.join(DIR, "rec-%d.json" % n))


def start(workdir_hex):
    """Before the first cell: the notebook's directory is its files'."""
    os.makedirs(DIR, mode=0o700, exist_ok=True)
    os.chdir(bytes.fromhex(workdir_hex).decode("utf-8"))


def run(n, src_hex, ns):
    global _shown
    code = bytes.fromhex(src_hex).decode("utf-8", "replace")
    fname = "<cell-%d>" % n
    linecache.cache[fname] = (len(code), None, code.splitlines(True), fname)
    rec = {"display": [], "error": []}
    _shown = rec["display"]
    sh = _shell()
    publish = None
    if sh is not None:  # IPython's display() publishes through display_pub
        publish = sh.display_pub.publish
        sh.display_pub.publish = lambda data, *a, **k: _shown.append(dict(data))
    ns.setdefault("display", display)
    try:
        _run(code, fname, ns, rec)
    except BaseException:  # KeyboardInterrupt (a timeout) and SystemExit too, as a kernel
        et, ev, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename != fname:
            tb = tb.tb_next  # from the cell's own frame on
        rec["error"].append(_error(et, ev, tb))
    finally:
        _shown = None
        if publish is not None:
            sh.display_pub.publish = publish
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        _write(n, rec)
