#!/usr/bin/python3
"""t_metrics.sh's client (standard library only).

  metrics_check.py drive URL TOKEN        requests whose traces the metrics show;
                                          trace context in answers, logs, cells
  metrics_check.py parse METRICS_URL      a strict check of the text format
  metrics_check.py prom PROM_URL WAIT_S   what a user asks Prometheus
  metrics_check.py log LOGFILE TRACE_ID   the request's log line has the trace id
Each check prints "ok - ..." or "FAIL - ..."; the exit status is the
number of failures (at most 100).
"""
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

FAILS = 0
GIVEN_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
GIVEN = "00-%s-00f067aa0ba902b7-01" % GIVEN_TRACE
TP_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def check(what, cond, detail=""):
    global FAILS
    if cond:
        print("ok   - " + what)
    else:
        FAILS += 1
        print("FAIL - %s %s" % (what, str(detail)[:600]))


def call(url, method="GET", body=None, token=None, headers=None, timeout=60):
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def header(headers, name):
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    return None


def valid_tp(v):
    m = TP_RE.match(v or "")
    return m and m.group(1) != "0" * 32 and m.group(2) != "0" * 16


def drive(url, token):
    # /run_code with a trace context: the answer carries the same trace id
    st, h, b = call(url + "/run_code", "POST",
                    {"code": "import os; print(os.environ.get('TRACEPARENT'))",
                     "language": "python"}, token, {"traceparent": GIVEN})
    res = json.loads(b)
    check("/run_code python printing its TRACEPARENT succeeds",
          st == 200 and res.get("status") == "Success", b)
    tp = header(h, "traceparent")
    out = ((res.get("run_result") or {}).get("stdout") or "").strip()
    check("the /run_code program sees the answer's traceparent as TRACEPARENT", out == tp, (out, tp))
    check("the answer's traceparent is valid", valid_tp(tp), tp)
    check("... keeps the trace id given", tp and tp.split("-")[1] == GIVEN_TRACE, tp)
    check("... with the server's own span id as the parent",
          tp and tp.split("-")[2] != "00f067aa0ba902b7", tp)
    check("... and the flags given", tp and tp.endswith("-01"), tp)
    # a failing /run_code (Failed): counted by language and status
    st, h, b = call(url + "/run_code", "POST",
                    {"code": "import sys; sys.exit(3)", "language": "python"}, token)
    check("/run_code of a failing program answers Failed",
          st == 200 and json.loads(b).get("status") == "Failed", b)
    # a cell: an exec that hits its timeout, and TRACEPARENT in its env
    st, h, b = call(url + "/cells", "POST", {}, token)
    check("POST /cells makes a cell", st == 201, b)
    cid = json.loads(b)["id"]
    st, h, b = call(url + "/cells/%s/exec" % cid, "POST",
                    {"cmd": "sleep 30", "timeout": 0.5}, token)
    res = json.loads(b)
    check("an exec past its timeout says limit_hit timeout",
          st == 200 and res.get("limit_hit") == "timeout", b)
    st, h, b = call(url + "/cells/%s/exec" % cid, "POST",
                    {"cmd": "printf %s \"$TRACEPARENT\""}, token, {"traceparent": GIVEN})
    res = json.loads(b)
    tp = header(h, "traceparent")
    check("the command sees TRACEPARENT", valid_tp(res.get("stdout")), b)
    check("... the same as the answer's header", res.get("stdout") == tp, (res, tp))
    check("... with the trace id given", (res.get("stdout") or "").startswith("00-" + GIVEN_TRACE),
          res)
    st, h, b = call(url + "/cells/%s/exec" % cid, "POST",
                    {"cmd": "printf %s \"$TRACEPARENT\"", "env": {"TRACEPARENT": "mine"}},
                    token, {"traceparent": GIVEN})
    check("a TRACEPARENT the request's env sets wins",
          json.loads(b).get("stdout") == "mine", b)
    # no trace context, or a bad one: a new trace id
    st, h, b = call(url + "/cells/%s/exec" % cid, "POST", {"cmd": "true"}, token)
    tp = header(h, "traceparent")
    check("without a traceparent the server makes one", valid_tp(tp), tp)
    check("... that is not the one given before", tp and GIVEN_TRACE not in tp, tp)
    bad = ["01-%s-00f067aa0ba902b7-01" % GIVEN_TRACE,         # version
           "00-%s-00f067aa0ba902b7-01" % ("0" * 32),          # zero trace id
           "00-%s-0000000000000000-01" % GIVEN_TRACE,         # zero parent id
           "00-%s-00f067aa0ba902b7-01" % GIVEN_TRACE.upper(), # upper case
           "00-%s-00f067aa0ba902b7-1" % GIVEN_TRACE,          # short flags
           "00-%s-00f067aa0ba902b7-01-x" % GIVEN_TRACE,       # trailing
           "garbage"]
    for v in bad:
        st, h, b = call(url + "/v1/ping", headers={"traceparent": v})
        tp = header(h, "traceparent")
        check("an invalid traceparent (%s) is treated as absent" % v[:24],
              st == 200 and valid_tp(tp) and GIVEN_TRACE not in tp.lower(), tp)
    st, h, b = call(url + "/cells/%s" % cid, "DELETE", None, token)
    check("DELETE the cell", st == 200, b)
    # refused: no token (401), on a route template with an id
    st, h, b = call(url + "/cells/%s/exec" % ("0" * 16), "POST", {"cmd": "true"})
    check("a request without the token: 401", st == 401, b)
    st, h, b = call(url + "/metrics")
    check("GET /metrics on the API listener needs the token", st == 401, b)
    st, h, b = call(url + "/metrics", token=token)
    check("... and answers with it", st == 200 and b"sandcell_build_info" in b, b[:200])
    # unknown routes: one label value, whatever the path
    for p in ("/nope/1", "/nope/2", "/x%d" % time.time_ns()):
        call(url + p, token=token)


NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                       r'(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$')


def parse_labels(s):
    out, pos = {}, 0
    while pos < len(s):
        m = LABEL_RE.match(s, pos)
        if not m:
            raise ValueError("bad labels: " + s)
        if m.group(1) in out:
            raise ValueError("label twice: " + s)
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def parse_text(text):
    """A strict reader of the text format: every sample under a HELP and a
    TYPE of its family, given once each and before its samples; families
    not split; values numbers; no series twice; histograms with
    increasing le, cumulative counts that never fall, +Inf == _count."""
    families, types, order, seen = {}, {}, [], set()
    current = None
    if not text.endswith("\n"):
        raise ValueError("the text does not end with a newline")
    for ln in text.split("\n")[:-1]:
        if ln.startswith("# HELP "):
            name = ln.split(" ")[2]
            if not NAME_RE.match(name) or name in families:
                raise ValueError("bad or repeated HELP: " + ln)
            families[name] = []
            order.append(name)
            current = name
        elif ln.startswith("# TYPE "):
            parts = ln.split(" ")
            if len(parts) != 4 or parts[2] != current or parts[3] not in (
                    "counter", "gauge", "histogram", "summary", "untyped"):
                raise ValueError("TYPE not right after its HELP: " + ln)
            if parts[2] in types:
                raise ValueError("TYPE twice: " + ln)
            types[parts[2]] = parts[3]
        elif ln.startswith("#") or not ln:
            raise ValueError("unexpected line: %r" % ln)
        else:
            m = SAMPLE_RE.match(ln)
            if not m:
                raise ValueError("bad sample: " + ln)
            name, labels, value = m.group(1), parse_labels((m.group(2) or "{}")[1:-1]), m.group(3)
            fam = name
            if current and types.get(current) == "histogram":
                for suf in ("_bucket", "_sum", "_count"):
                    if name == current + suf:
                        fam = current
            if fam != current or current not in types:
                raise ValueError("sample outside its family: " + ln)
            v = float(value)  # ValueError when not a number
            if types[current] == "counter" and (v < 0 or math.isnan(v)):
                raise ValueError("negative counter: " + ln)
            key = (name, tuple(sorted(labels.items())))
            if key in seen:
                raise ValueError("series twice: " + ln)
            seen.add(key)
            families[current].append((name, labels, v))
    for fam, t in types.items():
        if t == "histogram":
            check_histogram(fam, families[fam])
    return families, types


def check_histogram(fam, samples):
    groups = {}
    for name, labels, v in samples:
        rest = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "count": None, "sum": None})
        if name == fam + "_bucket":
            le = labels.get("le")
            if le is None:
                raise ValueError("%s: a bucket without le" % fam)
            g["buckets"].append((math.inf if le == "+Inf" else float(le), v))
        elif name == fam + "_count":
            g["count"] = v
        elif name == fam + "_sum":
            g["sum"] = v
    for rest, g in groups.items():
        b = g["buckets"]
        if not b or b[-1][0] != math.inf:
            raise ValueError("%s%s: no +Inf bucket last" % (fam, rest))
        for (l1, c1), (l2, c2) in zip(b, b[1:]):
            if not l2 > l1:
                raise ValueError("%s%s: le not increasing" % (fam, rest))
            if c2 < c1:
                raise ValueError("%s%s: buckets not cumulative" % (fam, rest))
        if g["count"] is None or g["sum"] is None or g["count"] != b[-1][1]:
            raise ValueError("%s%s: +Inf %s != _count %s" % (fam, rest, b[-1][1], g["count"]))


def parse(murl):
    st, h, b = call(murl)
    check("GET /metrics on --metrics-listen needs no token", st == 200, b[:200])
    ctype = header(h, "Content-Type") or ""
    check("... text/plain; version=0.0.4", ctype.startswith("text/plain; version=0.0.4"), ctype)
    try:
        fams, types = parse_text(b.decode())
        check("the exposition passes the strict format check", True)
    except ValueError as e:
        check("the exposition passes the strict format check", False, e)
        return
    for name in ("sandcell_http_requests_total", "sandcell_http_request_duration_seconds",
                 "sandcell_http_requests_in_flight", "sandcell_run_code_total",
                 "sandcell_limit_hits_total", "sandcell_http_requests_refused_total",
                 "sandcell_egress_decisions_total", "sandcell_cell_acquire_seconds",
                 "sandcell_cells", "sandcell_pool_target", "process_resident_memory_bytes",
                 "process_open_fds", "sandcell_build_info"):
        check("family %s is there" % name, name in fams)
    starts = {s[1].get("start") for s in fams.get("sandcell_cell_acquire_seconds", [])}
    check("cell starts are split pooled vs cold, and only so", starts == {"pooled", "cold"}, starts)
    started = sum(s[2] for s in fams.get("sandcell_cell_acquire_seconds", [])
                  if s[0].endswith("_count"))
    check("... and counted (the /run_code requests took cells)", started > 0, started)
    routes = {s[1].get("route") for s in fams.get("sandcell_http_requests_total", [])}
    check("route labels are templates (no ids, no paths)",
          routes and all(r == "unmatched" or r.startswith("/") and not re.search(r"[0-9a-f]{16}", r)
                         and not r.startswith("/nope") and not r.startswith("/x")
                         for r in routes), routes)
    check("... unknown paths are one 'unmatched'", "unmatched" in routes, routes)
    st, h, b = call(murl.replace("/metrics", "/cells"))
    check("the metrics listener serves nothing else", st == 404, st)


def prom_query(purl, q):
    st, h, b = call(purl + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    if st != 200:
        return None
    j = json.loads(b)
    if j.get("status") != "success":
        return None
    return j["data"]["result"]


def prom_value(purl, q):
    r = prom_query(purl, q)
    if not r:
        return None
    return float(r[0]["value"][1])


def prom(purl, wait_s):
    """Wait (polling, by the clock) until Prometheus scraped the server
    after the requests, then ask what a user would."""
    deadline = time.monotonic() + float(wait_s)
    want = 'sandcell_limit_hits_total{kind="timeout"}'
    up = None
    while time.monotonic() < deadline:
        up = prom_value(purl, 'up{job="sandcell"}')
        if up == 1 and (prom_value(purl, want) or 0) >= 1:
            break
        time.sleep(0.2)
    check("Prometheus scrapes the server (up == 1)", up == 1, up)
    v = prom_value(purl, 'sandcell_http_requests_total{route="/run_code",method="POST",code="200"}')
    check("requests counted by route template and code: /run_code 200 == 2", v == 2, v)
    v = prom_value(purl, 'sum(sandcell_http_requests_total{route="/cells/{id}/exec",code="200"})')
    check("... /cells/{id}/exec 200 == 4", v == 4, v)
    v = prom_value(purl, 'sandcell_http_requests_total{route="/cells/{id}/exec",code="401"}')
    check("... the unauthenticated request: /cells/{id}/exec 401 == 1", v == 1, v)
    v = prom_value(purl, 'sandcell_http_requests_total{route="unmatched",code="404"}')
    check("... unknown paths under one label value: unmatched 404 == 3", v == 3, v)
    v = prom_value(purl, 'sandcell_run_code_total{language="python",status="Success"}')
    check("/run_code by language and status: python Success == 1", v == 1, v)
    v = prom_value(purl, 'sandcell_run_code_total{language="python",status="Failed"}')
    check("... python Failed == 1", v == 1, v)
    v = prom_value(purl, want)
    check("the exec's timeout is a limit hit of kind timeout == 1", v == 1, v)
    v = prom_value(purl, 'histogram_quantile(0.5, sum by (le) ('
                   'sandcell_http_request_duration_seconds_bucket{route="/run_code"}))')
    check("histogram_quantile of /run_code's latency is a number", v is not None and v > 0, v)
    v = prom_value(purl, 'sandcell_pool_target')
    check("the pool's target is there", v is not None and v >= 1, v)
    # idle, the pool refills to its target: its ready cells are a state
    # (up to as many more: /cells cells that came back renewed)
    pooled = None
    while time.monotonic() < deadline:
        pooled = prom_value(purl, 'sandcell_cells{state="pooled"}')
        if pooled is not None and v <= pooled <= 2 * v:
            break
        time.sleep(0.2)
    check("cells by state: the pool's ready cells (pooled) reach its target, and at most "
          "twice it", pooled is not None and v <= pooled <= 2 * v, (pooled, v))
    v = prom_value(purl, 'sandcell_pool_renewals_total{result="renewed"}')
    check("the cells of /run_code went back to the pool renewed (>= 2)", v is not None and v >= 2, v)
    v = prom_value(purl, 'sandcell_pool_renewals_total{result="removed"}')
    check("... none had to be removed instead", v == 0, v)
    v = prom_value(purl, 'sandcell_build_info')
    check("build info is 1", v == 1, v)


def full(url, murl, token):
    """Every slot taken (the server runs with --max-concurrency 2): a
    request is refused 503, a scrape still answers, on both listeners."""
    import threading
    st, h, b = call(url + "/cells", "POST", {}, token)
    cid = json.loads(b)["id"]
    holders = [threading.Thread(target=call, args=(url + "/cells/%s/exec" % cid, "POST",
                                                   {"cmd": "sleep 15"}, token))
               for _ in range(2)]
    for t in holders:
        t.start()
    deadline = time.monotonic() + 20
    inflight = None
    while time.monotonic() < deadline:
        st, h, b = call(murl)
        m = re.search(rb"^sandcell_http_requests_in_flight (\d+)$", b, re.M)
        inflight = int(m.group(1)) if m else None
        if inflight == 2:
            break
        time.sleep(0.05)
    check("both slots taken (in flight == 2)", inflight == 2, inflight)
    st, h, b = call(url + "/cells", "GET", None, token)
    check("a request while the server is full: 503", st == 503, st)
    st, h, b = call(url + "/metrics", token=token)
    check("GET /metrics with the token still answers (takes no slot)", st == 200, st)
    st, h, b = call(murl)
    check("... and on --metrics-listen", st == 200 and
          re.search(rb'^sandcell_http_requests_refused_total\{code="503"\} [1-9]', b, re.M),
          b[:100])
    for t in holders:
        t.join()
    call(url + "/cells/%s" % cid, "DELETE", None, token)


def dash(purl, path):
    """Every query of the Grafana dashboard parses in Prometheus, and the
    main ones have data after the requests."""
    d = json.load(open(path))
    check("the dashboard has panels", len(d.get("panels", [])) >= 5)
    for p in d["panels"]:
        for t in p["targets"]:
            e = t["expr"].replace("$__rate_interval", "5m").replace("$job", ".*")
            e = e.replace("$instance", ".*")
            st, h, b = call(purl + "/api/v1/query?" + urllib.parse.urlencode({"query": e}))
            check("dashboard query of '%s' parses" % p["title"], st == 200, b[:300])


def log(path, trace):
    lines = [json.loads(l) for l in open(path) if l.startswith("{")]
    hit = [l for l in lines if l.get("trace_id") == trace]
    check("the request's log line carries the trace id given", bool(hit), lines[:3])
    check("every request log line has a 32-hex trace_id",
          all(re.match("^[0-9a-f]{32}$", l.get("trace_id", "")) for l in lines
              if "path" in l), lines[:3])


def main():
    cmd = sys.argv[1]
    if cmd == "drive":
        drive(sys.argv[2], sys.argv[3])
    elif cmd == "parse":
        parse(sys.argv[2])
    elif cmd == "prom":
        prom(sys.argv[2], sys.argv[3])
    elif cmd == "full":
        full(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "dash":
        dash(sys.argv[2], sys.argv[3])
    elif cmd == "log":
        log(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else GIVEN_TRACE)
    sys.exit(min(FAILS, 100))


if __name__ == "__main__":
    main()
