"""The requests the Python e2b SDK (PyPI e2b 2.45, packages/python-sdk of
github:e2b-dev/E2B) sends for slime's E2BSandbox (slime/agent/sandbox.py),
sent by hand with the standard library only, and the answers checked as
the SDK parses them. The SDK cannot be installed here; over plain HTTP it
speaks HTTP/1.1 (pyqwest and httpx without TLS), as this does.

slime's calls, in its order:
  AsyncSandbox.create(timeout=3600, metadata={KEY: IMAGE, "PREFIX/size": "md"})
      POST /sandboxes (the REST client: X-API-KEY, the SDK's default headers)
  commands.run(cmd, user="root", envs=..., timeout=120)
      POST /process.Process/Start (connectrpc, the SDK's JSON codec:
      application/connect+json, an enveloped StartRequest, Connect-Timeout-Ms,
      Authorization: Basic base64("root:"), Keepalive-Ping-Interval)
  files.write(path, str, user="root")             multipart POST /files
  files.write(path, bytes, user="root", use_octet_stream=True, gzip=False)
      application/octet-stream POST /files?path=&username=root
  files.read(path, user="root")                   GET /files?path=&username=root
  kill()                                          DELETE /sandboxes/{id}

Usage: e2b_slime_wire.py URL API_KEY IMAGE_KEY IMAGE MARKER
(MARKER: the text of /etc/e2b-image in IMAGE). One "ok   - " or "FAIL - "
line per check, then "done" when every check passed (exit 0), else exit 1.
"""
import base64
import codecs
import http.client
import json
import platform
import struct
import sys
import urllib.parse

SDK_VERSION = "2.45.1"
ENVD_PORT = 49983
fails = 0


def check(desc, cond, info=""):
    global fails
    print(("ok   - " if cond else "FAIL - ") + desc + ("" if cond else " :: " + str(info)[:1500]))
    if not cond:
        fails += 1


class Wire:
    def __init__(self, url, api_key):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.api_key = api_key
        # e2b/api/metadata.py's default_headers and the User-Agent of
        # connection_config.py, on every request of the REST client
        self.default = {
            "User-Agent": "e2b-python-sdk/" + SDK_VERSION,
            "lang": "python",
            "lang_version": platform.python_version(),
            "package_version": SDK_VERSION,
            "publisher": "e2b",
            "sdk_runtime": "python",
            "system": platform.system(),
        }

    def send(self, method, path, body=None, headers=None):
        """(status, headers, body bytes) of one request on a new connection."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=300)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    # --- the control plane (e2b.api.client) ---
    def api(self, method, path, obj=None):
        h = dict(self.default)
        h["X-API-KEY"] = self.api_key
        body = None
        if obj is not None:
            h["Content-Type"] = "application/json"
            body = json.dumps(obj).encode()
        return self.send(method, path, body, h)


class Sandbox:
    """What AsyncSandbox keeps of a create: the id, the envd access token
    and version, and the headers of every envd request
    (ConnectionConfig.sandbox_headers)."""

    def __init__(self, wire, created):
        self.wire = wire
        self.id = created["sandboxID"]
        self.envd_version = tuple(int(x) for x in created["envdVersion"].split("."))
        self.envd_headers = {
            "User-Agent": wire.default["User-Agent"],
            "E2b-Sandbox-Id": self.id,
            "E2b-Sandbox-Port": str(ENVD_PORT),
        }
        if created.get("envdAccessToken"):
            self.envd_headers["X-Access-Token"] = created["envdAccessToken"]

    @staticmethod
    def basic(user):
        return {"Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()}

    def run(self, cmd, user="root", envs=None, timeout=120):
        """commands.run: (exit code, stdout, stderr, the end event, frames)
        as the SDK's AsyncCommandHandle gathers them."""
        process = {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}
        if envs:  # proto3 JSON leaves empty and default fields out
            process["envs"] = envs
        msg = json.dumps({"process": process}).encode()
        h = dict(self.envd_headers)
        h.update(self.basic(user))
        h.update({
            "Content-Type": "application/connect+json",
            "Connect-Protocol-Version": "1",
            "Connect-Timeout-Ms": str(int(timeout * 1000)),
            "Keepalive-Ping-Interval": "50",
        })
        status, rh, body = self.wire.send("POST", "/process.Process/Start",
                                          b"\0" + struct.pack(">I", len(msg)) + msg, h)
        if status != 200 or not rh.get("content-type", "").startswith("application/connect+json"):
            raise RuntimeError("Start: %d %s %r" % (status, rh.get("content-type"), body[:300]))
        frames = []
        while body:
            flags, n = body[0], struct.unpack(">I", body[1:5])[0]
            frames.append((flags, json.loads(body[5:5 + n])))
            body = body[5 + n:]
        out, err = codecs.getincrementaldecoder("utf-8")("replace"), codecs.getincrementaldecoder("utf-8")("replace")
        stdout = stderr = ""
        end = pid = None
        for flags, m in frames:
            if flags & 2:  # the end of the stream: {} or {"error": ...}
                if m.get("error"):
                    raise RuntimeError("Start ended with %r" % m["error"])
                continue
            ev = m.get("event", {})
            if "start" in ev:
                pid = ev["start"]["pid"]
            elif "data" in ev:
                d = ev["data"]
                if "stdout" in d:
                    stdout += out.decode(base64.b64decode(d["stdout"]))
                if "stderr" in d:
                    stderr += err.decode(base64.b64decode(d["stderr"]))
            elif "end" in ev:
                end = ev["end"]
        if pid is None or end is None or frames[-1][0] != 2:
            raise RuntimeError("Start: no start, end or end-stream frame in %r" % frames)
        # process_pb.ProcessEvent.EndEvent: exit_code (int32, left out when 0)
        return end.get("exitCode", 0), stdout, stderr, end, frames

    def write_text(self, path, text, user="root"):
        """files.write(path, str): httpx's multipart, one part "file" named
        by the path."""
        boundary = "e2bwire" + base64.b16encode(path.encode()[:8]).decode().lower()
        part = ('--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, path)).encode()
        body = part + text.encode() + ("\r\n--%s--\r\n" % boundary).encode()
        h = dict(self.envd_headers)
        h["Content-Type"] = "multipart/form-data; boundary=" + boundary
        q = urllib.parse.urlencode({"username": user, "path": path})
        return self.wire.send("POST", "/files?" + q, body, h)

    def write_octet(self, path, data, user="root"):
        """files.write(path, bytes, use_octet_stream=True, gzip=False)."""
        h = dict(self.envd_headers)
        h["Content-Type"] = "application/octet-stream"
        q = urllib.parse.urlencode({"path": path, "username": user})
        return self.wire.send("POST", "/files?" + q, data, h)

    def read(self, path, user="root"):
        q = urllib.parse.urlencode({"path": path, "username": user})
        return self.wire.send("GET", "/files?" + q, None, dict(self.envd_headers))


def write_info_ok(status, rh, body, path):
    """The SDK: 200 and r.json() a non-empty list of WriteInfo {name, type, path}."""
    if status != 200:
        return False
    try:
        infos = json.loads(body)
    except ValueError:
        return False
    return (isinstance(infos, list) and len(infos) == 1 and infos[0].get("path") == path
            and infos[0].get("name") == path.rsplit("/", 1)[-1] and infos[0].get("type") == "file")


def main():
    url, api_key, key, image, marker = sys.argv[1:6]
    wire = Wire(url, api_key)
    prefix = key.rsplit("/", 1)[0] if "/" in key else ""
    metadata = {key: image, (prefix + "/size" if prefix else "size"): "md"}
    # NewSandbox.to_dict of AsyncSandbox.create(timeout=3600, metadata=md)
    status, _, body = wire.api("POST", "/sandboxes", {
        "templateID": "base", "timeout": 3600, "secure": True, "allow_internet_access": True,
        "metadata": metadata, "envVars": {}})
    created = json.loads(body) if status == 201 else {}
    check("create with slime's metadata: 201, an id, an envd version and access token",
          status == 201 and created.get("sandboxID") and created.get("envdAccessToken")
          and created.get("envdVersion"), (status, body[:300]))
    if status != 201:
        print("fails %d" % (fails + 1))
        sys.exit(1)
    sb = Sandbox(wire, created)
    # the SDK refuses envd < 0.1.0; octet-stream uploads need 0.5.7, else
    # it falls back to multipart
    check("envdVersion is one the SDK takes octet-stream uploads from (>= 0.5.7)",
          sb.envd_version >= (0, 5, 7), created.get("envdVersion"))
    status, _, body = wire.api("GET", "/sandboxes/" + sb.id)
    info = json.loads(body) if status == 200 else {}
    check("getInfo gives slime's metadata back", info.get("metadata") == metadata, info)

    code, out, err, end, frames = sb.run("cat /etc/e2b-image; id -u; pwd")
    check("commands.run(user='root') in the image the metadata named, as uid 0, in /home/user",
          code == 0 and out == marker + "\n0\n/home/user\n" and err == "", (code, out, err))
    check("... the frames: start, data, end, then the end-stream frame {}",
          "start" in frames[0][1]["event"] and end.get("exited") is True and frames[-1] == (2, {}), frames)
    code, out, err, _, _ = sb.run('echo "$SLIME_X"; echo oops >&2; exit 3', envs={"SLIME_X": "x1"})
    check("a failing command: its exit code (the SDK's CommandExitException), stdout, stderr, envs",
          code == 3 and out == "x1\n" and err == "oops\n", (code, out, err))
    # slime's exec_and_wait: a detached launcher polled for its marker
    tag = "wire"
    status, rh, body = sb.write_text("/tmp/.%s.sh" % tag,
                                     "#!/bin/bash\necho launched; echo $? > /tmp/.%s.done\n" % tag)
    check("files.write(path, str): multipart, the SDK's WriteInfo back",
          write_info_ok(status, rh, body, "/tmp/.%s.sh" % tag), (status, body[:300]))
    code, _, err, _, _ = sb.run("chmod +x /tmp/.%s.sh; mkdir /tmp/.%s.spawned 2>/dev/null || exit 0; "
                                "setsid bash /tmp/.%s.sh < /dev/null > /tmp/.%s.out 2>&1 &" % (tag, tag, tag, tag))
    check("exec_and_wait's detached spawn", code == 0, (code, err))
    done = ""
    for _ in range(600):
        code, done, _, _, _ = sb.run("test -f /tmp/.%s.done && cat /tmp/.%s.done" % (tag, tag), timeout=15)
        if code == 0 and done.strip():
            break
    status, _, body = sb.read("/tmp/.%s.out" % tag)
    check("... its marker and its output (files.read)",
          done.strip() == "0" and status == 200 and body == b"launched\n", (done, status, body[:200]))
    blob = bytes(range(256)) * 300
    status, rh, body = sb.write_octet("/home/user/blob.bin", blob)
    check("files.write(bytes, use_octet_stream=True): application/octet-stream, WriteInfo back",
          write_info_ok(status, rh, body, "/home/user/blob.bin"), (status, body[:300]))
    code, out, _, _, _ = sb.run("wc -c < /home/user/blob.bin")
    status, _, body = sb.read("/home/user/blob.bin")
    check("... every byte lands (76800 of them) and reads back",
          code == 0 and out.strip() == "76800" and status == 200 and body == blob, (out, status, len(body)))
    status, rh, body = sb.read("/no/such/file")
    check("files.read of a missing file: 404 with a JSON message (the SDK's FileNotFoundException)",
          status == 404 and "message" in json.loads(body or b"{}"), (status, body[:200]))

    status, _, _ = wire.api("DELETE", "/sandboxes/" + sb.id)
    check("kill: 204", status == 204, status)
    status, _, _ = wire.api("DELETE", "/sandboxes/" + sb.id)
    check("kill again: 404 (the SDK's False)", status == 404, status)
    status, _, _ = sb.read("/home/user/blob.bin")
    check("files.read after kill: 502 (slime's read_file then gives '')", status == 502, status)

    print("done" if not fails else "fails %d" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
