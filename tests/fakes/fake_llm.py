#!/usr/bin/env python3
"""A scripted stand-in for a hosted LLM, for tests only.

It speaks both wire formats over real HTTP on 127.0.0.1:
  POST .../chat/completions   OpenAI-compatible chat completions with tools
  POST .../messages           Anthropic Messages API with tool_use blocks
and answers the N-th request with the N-th entry of a scenario file.

Scenario: a JSON list (or {"responses": [...]}) of entries, one per request:
  {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "ls"}}],
   "content": "text", "reasoning": "thinking"}     a model turn, rendered in
                                                  the format of the request;
                                                  "arguments" may be a string
                                                  sent verbatim (e.g. bad JSON)
  {"status": 429, "headers": {"Retry-After": "1"}, "body": {...}}
  {"raw": "not json"}           body sent verbatim with status 200
  {"body": {...}}               JSON body sent verbatim
  {"close": true}               drop the connection without answering
  {"delay": 2.5, ...}           wait before answering
  {"repeat": 50, ...}           the entry stands for 50 requests
  {"expect_in_request": ["s"]}  answer 400 unless the request body holds s
  {"echo_auth": true, ...}      put the request's credentials in the content
Hostile modes (one per behaviour a broken or hostile server shows):
  %%AUTH%% in any string        the request's credentials (Authorization, else
                                x-api-key), e.g. in an error body, as servers
                                that quote "Incorrect API key provided: ..." do
  {"invalid_utf8": true, ...}   every %%BAD_UTF8%% in the encoded reply becomes
                                the raw bytes ff fe (not valid UTF-8)
  {"tool_calls_times": N, ...}  the entry's tool_calls repeated N times
Strings may hold @@NAME@@, replaced by the environment variable NAME, and
@@PAD:N@@, replaced by N times "x".
Past the last entry every request gets a 400 "scenario exhausted".

Conversation mode (--conversations FILE, for many episodes at once, e.g.
sandcell batch): the reply depends on the request, not on the order of
arrival. FILE is {"rules": [{"match": REGEX, "responses": [entry, ...]}]};
the first rule whose REGEX matches the first user message is taken, and its
K-th entry answers a request whose history holds K assistant messages.
Strings in entries may hold {{N}}, replaced by group N of the match. Past
the last entry: a 400 "conversation exhausted"; no rule matching: a 400.
--delay S makes every reply wait S seconds (a model's latency).

One process, one asyncio event loop: thousands of connections at once
(sandcell batch at high concurrency) cost a coroutine each, not a thread,
so the server's own latency stays out of what a benchmark measures.

Every request is appended to --log as one JSON line (path, headers, body,
receive/send times on the server's clock, server_ms); each response carries
X-Fake-Server-Ms. The port is printed on stdout and written to --port-file.
"""
import argparse
import asyncio
import json
import os
import re
import resource
import socket
import sys
import threading
import time
from email.utils import formatdate
from http import HTTPStatus

ENV_REF = re.compile(r"@@([A-Za-z_][A-Za-z0-9_]*)@@")
PAD_REF = re.compile(r"@@PAD:([0-9]{1,8})@@")


def expand(v):
    if isinstance(v, str):
        v = PAD_REF.sub(lambda m: "x" * int(m.group(1)), v)
        return ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), v)
    if isinstance(v, list):
        return [expand(x) for x in v]
    if isinstance(v, dict):
        return {k: expand(x) for k, x in v.items()}
    return v


def load_scenario(path):
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict):
        data = data["responses"]
    out = []
    for entry in data:
        for _ in range(int(entry.get("repeat", 1))):
            out.append(entry)
    return out


def openai_body(entry, n, model, content):
    msg = {"role": "assistant", "content": content}
    if entry.get("reasoning"):
        msg["reasoning_content"] = entry["reasoning"]
    calls = []
    for i, tc in enumerate(entry.get("tool_calls", [])):
        args = tc.get("arguments", {})
        calls.append({
            "id": tc.get("id", "call_%d_%d" % (n, i)),
            "type": "function",
            "function": {
                "name": tc["name"],
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        })
    if calls:
        msg["tool_calls"] = calls
    usage = entry.get("usage", {"input": 100 + 10 * n, "output": 20})
    return {
        "id": "chatcmpl-fake-%d" % n,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": msg,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": usage["input"], "completion_tokens": usage["output"],
                  "total_tokens": usage["input"] + usage["output"]},
    }


def anthropic_body(entry, n, model, content):
    blocks = []
    if entry.get("reasoning"):
        blocks.append({"type": "thinking", "thinking": entry["reasoning"], "signature": "fake"})
    if content:
        blocks.append({"type": "text", "text": content})
    for i, tc in enumerate(entry.get("tool_calls", [])):
        args = tc.get("arguments", {})
        blocks.append({"type": "tool_use", "id": tc.get("id", "toolu_%d_%d" % (n, i)),
                       "name": tc["name"], "input": args})
    usage = entry.get("usage", {"input": 100 + 10 * n, "output": 20})
    return {
        "id": "msg_fake_%d" % n,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if entry.get("tool_calls") else "end_turn",
        "usage": {"input_tokens": usage["input"], "output_tokens": usage["output"]},
    }


def fill_auth(v, auth):
    if isinstance(v, str):
        return v.replace("%%AUTH%%", auth)
    if isinstance(v, list):
        return [fill_auth(x, auth) for x in v]
    if isinstance(v, dict):
        return {k: fill_auth(x, auth) for k, x in v.items()}
    return v


def first_user_text(body):
    msgs = body.get("messages") if isinstance(body, dict) else None
    for m in msgs or []:
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
            return ""
    return ""


def fill_groups(v, m):
    if isinstance(v, str):
        return re.sub(r"\{\{(\d+)\}\}", lambda g: m.group(int(g.group(1))) or "", v)
    if isinstance(v, list):
        return [fill_groups(x, m) for x in v]
    if isinstance(v, dict):
        return {k: fill_groups(x, m) for k, x in v.items()}
    return v


def load_conversations(path):
    with open(path) as f:
        data = json.load(f)
    rules = data["rules"] if isinstance(data, dict) else data
    return [(re.compile(r["match"], re.S), r["responses"]) for r in rules]


class State:
    conversations = None
    delay = 0.0

    def entry_for(self, body):
        """The entry answering this request (conversation or scenario mode)."""
        if self.conversations is None:
            return self.next_entry()
        with self.lock:
            n = self.n
            self.n += 1
            self.last_activity = time.monotonic()
        text = first_user_text(body)
        msgs = body.get("messages", []) if isinstance(body, dict) else []
        k = sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "assistant")
        for rx, responses in self.conversations:
            m = rx.search(text)
            if not m:
                continue
            if k < len(responses):
                return n, expand(fill_groups(responses[k], m))
            return n, {"status": 400, "body": {"error": {
                "message": "fake LLM: conversation exhausted after %d replies" % len(responses)}}}
        return n, {"status": 400, "body": {"error": {
            "message": "fake LLM: no conversation rule matches the first user message"}}}

    def __init__(self, scenario, log_path):
        self.scenario = scenario
        self.log_path = log_path
        self.n = 0
        self.lock = threading.Lock()
        self.last_activity = time.monotonic()

    def next_entry(self):
        with self.lock:
            n = self.n
            self.n += 1
            self.last_activity = time.monotonic()
        if n < len(self.scenario):
            return n, expand(self.scenario[n])
        return n, {"status": 400, "body": {"error": {
            "type": "invalid_request_error",
            "message": "fake LLM: scenario exhausted after %d requests" % len(self.scenario)}}}

    def log(self, record):
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(record) + "\n")

    T_SENT = '"@@t_sent@@"'

    def log_sent(self, record):
        """Log a request whose reply goes out next, stamping t_sent as late
        as possible: the line is formatted first and t_sent put in last,
        so that the server's own logging (JSON encoding, the file) is not
        counted as the client's time between a reply and its next request
        (one write of a ready line remains)."""
        if not self.log_path:
            return time.perf_counter()
        line = json.dumps(dict(record, t_sent="@@t_sent@@")) + "\n"
        with self.lock, open(self.log_path, "a") as f:
            t_sent = time.perf_counter()
            i = line.rfind(self.T_SENT)  # t_sent is the last key
            f.write(line[:i] + repr(t_sent) + line[i + len(self.T_SENT):])
        return t_sent


class Request:
    """One parsed HTTP request: what the handler reads of it."""

    def __init__(self, method, path, version, headers, raw):
        self.method, self.path, self.version = method, path, version
        self.header_list = headers  # [(name, value)] as sent
        self.headers = {}
        for k, v in headers:
            self.headers.setdefault(k.lower(), v)
        self.raw = raw

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)


class BadRequest(Exception):
    pass


MAX_HEADERS = 200
MAX_BODY = 256 << 20


async def read_request(reader, writer):
    """The next request on a connection, or None at its end."""
    line = b"\r\n"
    while line in (b"\r\n", b"\n"):  # blank lines between requests are allowed
        line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest("bad request line")
    headers = []
    while True:
        h = await reader.readline()
        if not h:
            return None
        if h in (b"\r\n", b"\n"):
            break
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep or len(headers) >= MAX_HEADERS:
            raise BadRequest("bad header")
        headers.append((name.strip(), value.strip()))
    req = Request(parts[0], parts[1], parts[2], headers, b"")
    try:
        length = int(req.header("Content-Length", "0") or 0)
    except ValueError:
        raise BadRequest("bad Content-Length")
    if length < 0 or length > MAX_BODY:
        raise BadRequest("bad Content-Length")
    if req.header("Expect", "").lower() == "100-continue" and req.version == "HTTP/1.1":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if length:
        req.raw = await reader.readexactly(length)
    return req


def response_bytes(status, headers, payload):
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = ["HTTP/1.1 %d %s" % (status, phrase),
             "Server: fake-llm/1 Python/%d.%d" % sys.version_info[:2],
             "Date: " + formatdate(usegmt=True),
             "Content-Type: application/json",
             "Content-Length: %d" % len(payload)]
    lines += ["%s: %s" % (k, v) for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


async def answer_post(st, req, t_recv):
    """(status, headers, payload) for a POST, or None to drop the connection."""
    raw = req.raw
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if req.path.endswith("/chat/completions"):
        api = "openai"
    elif req.path.endswith("/messages"):
        api = "anthropic"
    else:
        return 404, {}, json.dumps({"error": {"message": "no such endpoint"}}).encode()
    n, entry = st.entry_for(body)
    auth = req.header("Authorization") or req.header("x-api-key") or ""
    entry = fill_auth(entry, auth)
    if entry.get("tool_calls_times"):
        entry = dict(entry, tool_calls=entry.get("tool_calls", []) * int(entry["tool_calls_times"]))
    record = {"n": n, "path": req.path, "api": api,
              "headers": {k.lower(): v for k, v in req.header_list},
              "body": body, "t_recv": t_recv}
    if entry.get("delay") or st.delay:
        await asyncio.sleep(float(entry.get("delay", 0)) + st.delay)
    if entry.get("close"):
        st.log(dict(record, closed=True, t_sent=time.perf_counter()))
        return None
    status = int(entry.get("status", 200))
    headers = dict(entry.get("headers", {}))
    missing = [s for s in entry.get("expect_in_request", []) if s not in raw.decode("utf-8", "replace")]
    if missing:
        status, payload = 400, json.dumps({"error": {
            "message": "fake LLM: request %d lacks %r" % (n, missing)}}).encode()
    elif "raw" in entry:
        payload = entry["raw"].encode()
    elif "body" in entry:
        payload = json.dumps(entry["body"]).encode()
    else:
        content = entry.get("content", "")
        if entry.get("echo_auth"):
            content += " auth=%s key=%s" % (req.header("Authorization", ""),
                                            req.header("x-api-key", ""))
        model = (body or {}).get("model", "fake") if isinstance(body, dict) else "fake"
        render = openai_body if api == "openai" else anthropic_body
        payload = json.dumps(render(entry, n, model, content)).encode()
    if entry.get("invalid_utf8"):
        payload = payload.replace(b"%%BAD_UTF8%%", b"\xff\xfe")
    server_ms = (time.perf_counter() - t_recv) * 1000
    headers["X-Fake-Server-Ms"] = "%.3f" % server_ms
    st.log_sent(dict(record, status=status, server_ms=server_ms))
    return status, headers, payload


async def serve_connection(st, reader, writer):
    """Requests on one connection, in turn (HTTP/1.1 keep-alive)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # headers and body leave in one write anyway; no Nagle delay either way
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            try:
                req = await read_request(reader, writer)
            except BadRequest as e:
                writer.write(response_bytes(400, {"Connection": "close"}, json.dumps(
                    {"error": {"message": "fake LLM: %s" % e}}).encode()))
                break
            if req is None:
                break
            t_recv = time.perf_counter()
            conn = req.header("Connection", "").lower()
            keep = conn != "close" if req.version == "HTTP/1.1" else conn == "keep-alive"
            if req.method != "POST":
                out = 501, {}, json.dumps({"error": {"message": "unsupported method"}}).encode()
            else:
                out = await answer_post(st, req, t_recv)
            if out is None:  # {"close": true}: drop it without answering
                break
            status, headers, payload = out
            if str(headers.get("Connection", headers.get("connection", ""))).lower() == "close":
                keep = False
            writer.write(response_bytes(status, headers, payload))
            await writer.drain()
            if not keep:
                break
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        try:
            writer.close()
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def raise_fd_limit():
    """Every connection is an fd: thousands of episodes at once need more
    than the usual soft limit of 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


async def run(args, state):
    stop = asyncio.Event()
    server = await asyncio.start_server(
        lambda r, w: serve_connection(state, r, w), "127.0.0.1", args.port,
        backlog=4096, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print(port, flush=True)

    async def watchdog():
        while time.monotonic() - state.last_activity <= args.idle_exit:
            await asyncio.sleep(1)
        stop.set()

    dog = asyncio.ensure_future(watchdog())
    try:
        await stop.wait()
    finally:
        dog.cancel()
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario")
    ap.add_argument("--conversations", help="conversation mode: rules keyed by the problem")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds before every reply")
    ap.add_argument("--log")
    ap.add_argument("--port-file")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--idle-exit", type=float, default=600,
                    help="exit after this many seconds without a request")
    args = ap.parse_args()
    if not args.scenario and not args.conversations:
        ap.error("one of --scenario and --conversations is required")
    raise_fd_limit()
    state = State(load_scenario(args.scenario) if args.scenario else [], args.log)
    if args.conversations:
        state.conversations = load_conversations(args.conversations)
    state.delay = args.delay
    try:
        asyncio.run(run(args, state))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
