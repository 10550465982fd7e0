#!/usr/bin/env python3
"""Open a page in headless Chromium and report what the browser saw.

Used by t_batch_report.sh. Speaks the DevTools protocol over
--remote-debugging-pipe (fd 3: commands to the browser, fd 4: its replies
and events, each message JSON ended by a NUL): no port, no websocket.

  report_browser.py CHROMIUM URL OUT.json [--screenshot FILE.png]
                    [--width W] [--height H] [--timeout S]

OUT.json: {"state": what the page's script reports (see PROBE), "requests":
[every URL the page asked for], "blocked": [URLs blocked, with the reason],
"dialogs": [alert/confirm texts], "console": [console and log lines],
"exceptions": [uncaught script errors]}. Exit 0 when the page loaded and was
probed, 1 otherwise (the message on stderr).
"""
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PROBE = r"""
(function () {
  var q = function (s) { return document.querySelectorAll(s); };
  var ep = document.querySelector('#episode .episode-body') || document.querySelector('section.episode');
  var meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
  return JSON.stringify({
    ready: document.documentElement.getAttribute('data-report'),
    title: document.title,
    pwned: window.__pwned === undefined ? null : String(window.__pwned),
    rows: q('#attempts tbody tr.attempt').length,
    row_ids: Array.prototype.map.call(q('#attempts tbody tr.attempt td.id'), function (t) { return t.textContent; }),
    row_links: Array.prototype.map.call(q('#attempts tbody tr.attempt td.id a'), function (a) { return a.getAttribute('href'); }),
    charts: Array.prototype.map.call(q('svg.chart'), function (s) { return s.getAttribute('data-chart'); }),
    chart_marks: Array.prototype.map.call(q('svg.chart'), function (s) { return s.querySelectorAll('rect.bar, circle.dot').length; }),
    runs: q('section.run').length,
    compare: (document.getElementById('compare') || {}).textContent || null,
    episode_shown: !!(ep && !ep.closest('[hidden]') && ep.textContent.length),
    episode_text: ep ? ep.textContent : null,
    episode_steps: ep ? ep.querySelectorAll('li.step').length : 0,
    images: Array.prototype.map.call(document.images, function (i) { return {alt: i.alt, kind: i.src.slice(0, 24), w: i.naturalWidth, done: i.complete}; }),
    scripts: document.scripts.length,
    elements_with_handlers: Array.prototype.filter.call(q('*'), function (e) { return Array.prototype.some.call(e.attributes, function (a) { return /^on/i.test(a.name); }); }).length,
    csp: meta ? meta.getAttribute('content') : null,
    body_len: document.body ? document.body.textContent.length : 0,
    draw_ms: Number(document.documentElement.getAttribute('data-draw-ms')),
    load_ms: (function () { var n = performance.getEntriesByType('navigation')[0]; return n ? Math.round(n.loadEventEnd) : null; })()
  });
})()
"""


class Browser:
    def __init__(self, chromium, width, height):
        self.dir = tempfile.mkdtemp(prefix="sc-chromium.")
        cmd_r, self.cmd_w = os.pipe()
        self.ev_r, ev_w = os.pipe()

        def child():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)

        args = [chromium, "--headless", "--remote-debugging-pipe",
                # the browser's own sandbox needs privileges a test (root in
                # a container, or nobody) may lack; the page is what we test
                "--no-sandbox",
                "--user-data-dir=" + os.path.join(self.dir, "profile"),
                "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        env = dict(os.environ, HOME=self.dir, XDG_CONFIG_HOME=self.dir, XDG_CACHE_HOME=self.dir)
        self.proc = subprocess.Popen(args, preexec_fn=child, pass_fds=(3, 4), env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "stderr"), "wb"),
                                     start_new_session=True)
        os.close(cmd_r)
        os.close(ev_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the browser")
            r, _, _ = select.select([self.ev_r], [], [], min(left, 1.0))
            if r:
                chunk = os.read(self.ev_r, 1 << 20)
                if not chunk:
                    raise EOFError("the browser closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=60):
        i = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            m = self.read(deadline)
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout):
        deadline = time.monotonic() + timeout
        for k, m in enumerate(self.events):
            if m.get("method") == method:
                return m
        while True:
            m = self.read(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return m

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        os.close(self.cmd_w)
        os.close(self.ev_r)
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    a = sys.argv[1:]
    if len(a) < 3:
        sys.exit(__doc__)
    chromium, url, out = a[:3]
    opts = {"--screenshot": None, "--width": "1280", "--height": "1000", "--timeout": "120"}
    rest = a[3:]
    while rest:
        k = rest.pop(0)
        opts[k] = rest.pop(0)
    width, height, timeout = int(opts["--width"]), int(opts["--height"]), float(opts["--timeout"])
    b = Browser(chromium, width, height)
    try:
        tid = b.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        sid = b.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        for dom in ("Page", "Network", "Runtime", "Log"):
            b.call(dom + ".enable", session=sid)
        b.call("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=sid)
        b.call("Page.navigate", {"url": url}, session=sid, timeout=timeout)
        b.wait_event("Page.loadEventFired", timeout)
        # the page's script marks <html data-report=...> when it is done
        deadline = time.monotonic() + timeout
        while True:
            r = b.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session=sid)
            state = json.loads(r["result"]["value"])
            if state["ready"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # let anything the page might still do (a late request, an image) happen
        time.sleep(0.5)
        r = b.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session=sid)
        state = json.loads(r["result"]["value"])
        if opts["--screenshot"]:
            shot = b.call("Page.captureScreenshot", {"format": "png"}, session=sid, timeout=timeout)
            with open(opts["--screenshot"], "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        # drain the events that are already there
        try:
            while True:
                b.events.append(b.read(time.monotonic() + 0.3))
        except TimeoutError:
            pass
    except Exception as e:  # noqa: BLE001 - reported, then exit 1
        sys.stderr.write("report_browser: %s\n" % e)
        try:
            sys.stderr.write(open(os.path.join(b.dir, "stderr")).read()[-2000:])
        except OSError:
            pass
        b.close()
        return 1
    b.close()
    res = {"state": state, "requests": [], "blocked": [], "dialogs": [], "console": [], "exceptions": []}
    for m in b.events:
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Network.requestWillBeSent":
            res["requests"].append(p["request"]["url"][:200])
        elif meth == "Network.loadingFailed":
            res["blocked"].append({"reason": p.get("blockedReason"), "error": p.get("errorText")})
        elif meth == "Page.javascriptDialogOpening":
            res["dialogs"].append(p.get("message"))
        elif meth == "Runtime.consoleAPICalled":
            res["console"].append(" ".join(str(x.get("value", x.get("description", ""))) for x in p.get("args", [])))
        elif meth == "Log.entryAdded":
            e = p.get("entry", {})
            res["console"].append("%s: %s" % (e.get("source"), e.get("text", "")[:300]))
        elif meth == "Runtime.exceptionThrown":
            res["exceptions"].append(p.get("exceptionDetails", {}).get("text"))
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
