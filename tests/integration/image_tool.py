#!/usr/bin/env python3
"""Test helper for the image tests: crafts Docker/OCI archives (good and
hostile), packs root filesystems, and serves registry bearer tokens.

Images are made from the host's static busybox (/bin/busybox from the
busybox-static package), so they need nothing else to run.
"""
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.parse

BUSYBOX = "/bin/busybox"


def tar_bytes(entries, fmt=tarfile.PAX_FORMAT):
    """entries: (name, kind, data, mode[, uid]) with kind file|dir|sym|hard|chr;
    the owner is uid:uid (default 0:0)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, kind, data, mode, *owner in entries:
            ti = tarfile.TarInfo(name)
            ti.mode = mode
            ti.uid = ti.gid = owner[0] if owner else 0
            ti.mtime = 1700000000
            if kind == "file":
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                continue
            ti.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                       "hard": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE}[kind]
            if kind in ("sym", "hard"):
                ti.linkname = data
            if kind == "chr":
                ti.devmajor, ti.devminor = 1, 3
            t.addfile(ti)
    return buf.getvalue()


def busybox_base():
    bb = open(BUSYBOX, "rb").read()
    entries = [("bin", "dir", None, 0o755), ("bin/busybox", "file", bb, 0o755)]
    for tool in ("sh", "cat", "ls", "id", "stat", "echo", "test", "mkdir", "touch", "wc",
                 "find", "head", "sleep", "env", "pwd", "readlink"):
        entries.append(("bin/" + tool, "sym", "busybox", 0o777))
    return entries


def two_layers():
    """Layer 1: busybox and some files; layer 2 deletes /etc/gone with a
    whiteout, replaces /opq with an opaque directory, adds /etc/added."""
    l1 = busybox_base() + [
        ("etc", "dir", None, 0o755),
        ("etc/gone", "file", b"lower\n", 0o644),
        ("etc/kept", "file", b"kept\n", 0o644),
        ("opq", "dir", None, 0o755),
        ("opq/old", "file", b"old\n", 0o644),
        ("etc/hard", "hard", "etc/kept", 0o644),
        ("etc/abs-link", "sym", "/etc/kept", 0o777),
    ]
    l2 = [
        ("etc/.wh.gone", "file", b"", 0o644),
        ("etc/added", "file", b"added\n", 0o644),
        ("opq/.wh..wh..opq", "file", b"", 0o644),
        ("opq/new", "file", b"new\n", 0o644),
    ]
    return [tar_bytes(l1), tar_bytes(l2)]


CONFIG = {"Env": ["PATH=/bin", "IMAGE_VAR=from-image"], "WorkingDir": "/work",
          "Cmd": ["/bin/sh"]}


def many_layers(n):
    """n layers: busybox, then /layers/NN in each (each layer's file shows
    it was applied in order: /layers/last is overwritten by every one),
    with the same empty-directory layer repeated twice in the middle, as
    images built by Dockerfiles repeat empty layers."""
    layers = [tar_bytes(busybox_base())]
    empty = tar_bytes([("layers", "dir", None, 0o755)])
    for i in range(1, n - 2):
        layers.append(tar_bytes([("layers", "dir", None, 0o755),
                                 ("layers/%02d" % i, "file", b"%d\n" % i, 0o644),
                                 ("layers/last", "file", b"%d\n" % i, 0o644)]))
        if i == n // 2:
            layers += [empty, empty]
    return layers


def flat(layers):
    """One layer holding what the layers give, applied in order (no
    whiteouts among them)."""
    entries = {}
    for data in layers:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                body = t.extractfile(m).read() if m.isfile() else None
                entries[m.name] = (m, body)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for m, body in entries.values():
            t.addfile(m, io.BytesIO(body) if body is not None else None)
    return [buf.getvalue()]


def big_layers(n, mb):
    """n layers of incompressible data, mb MiB in all (a bench's image)."""
    per = mb * 1024 * 1024 // n
    return [tar_bytes([("data", "dir", None, 0o755),
                       ("data/%02d" % i, "file", os.urandom(per), 0o644)]) for i in range(n)]


def owners(marker):
    """One layer whose files belong to root and to uid/gid 1000 (and a
    root-only file); marker makes the layer's content (its id) unique."""
    return [tar_bytes(busybox_base() + [
        ("etc", "dir", None, 0o755),
        ("etc/marker", "file", marker.encode() + b"\n", 0o644),
        ("etc/root-only", "file", b"secret\n", 0o600),
        ("home", "dir", None, 0o755),
        ("home/dev", "dir", None, 0o755, 1000),
        ("home/dev/notes", "file", b"dev's\n", 0o644, 1000),
        ("shared", "dir", None, 0o1777),
    ])]


def config_json(layers_plain, extra=None):
    diff_ids = ["sha256:" + hashlib.sha256(x).hexdigest() for x in layers_plain]
    cfg = {"architecture": "amd64", "os": "linux", "config": extra or CONFIG,
           "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    return json.dumps(cfg).encode()


DPKG_STATUS = (b"Package: python3\nStatus: install ok installed\nVersion: 9.9.9-1\n\n"
               b"Package: ruby\nStatus: deinstall ok config-files\nVersion: 1:7.0-1\n\n"
               b"Package: perl\nVersion: 5.99-2\nStatus: install ok installed\n")


def dpkg_image(link):
    """busybox with a dpkg status (python3 9.9.9 installed, ruby removed,
    perl installed), or with /var a link to the host's `link`."""
    if link:
        return busybox_base() + [("var", "sym", link, 0o777)]
    return busybox_base() + [("var", "dir", None, 0o755), ("var/lib", "dir", None, 0o755),
                             ("var/lib/dpkg", "dir", None, 0o755),
                             ("var/lib/dpkg/status", "file", DPKG_STATUS, 0o644)]


def add_member(t, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    t.addfile(ti, io.BytesIO(data))


def write_docker(out, layers, cfg=None):
    """A `docker save` archive (the legacy layout: HEX/layer.tar)."""
    cj = cfg if cfg is not None else config_json(layers)
    with tarfile.open(out, "w") as t:
        names = []
        for x in layers:
            n = hashlib.sha256(x).hexdigest() + "/layer.tar"
            names.append(n)
            add_member(t, n, x)
        cname = hashlib.sha256(cj).hexdigest() + ".json"
        add_member(t, cname, cj)
        add_member(t, "manifest.json", json.dumps(
            [{"Config": cname, "RepoTags": ["test:latest"], "Layers": names}]).encode())


def zstd_frames(data):
    """data as zstd frames made by the zstd program: two when it is large
    enough to split (a reader must go on after the first frame ends)."""
    cut = len(data) // 2 if len(data) > 4096 else len(data)
    out = b""
    for part in (data[:cut], data[cut:]):
        if part:
            out += subprocess.run(["zstd", "-q", "-c", "-3"], input=part,
                                  capture_output=True, check=True).stdout
    return out


def compress_layer(data, how):
    """(blob, media type suffix) for how in gzip | zstd | none."""
    if how == "gzip":
        return gzip.compress(data, mtime=0), "+gzip"
    if how == "zstd":
        return zstd_frames(data), "+zstd"
    return data, ""


def write_oci(outdir, layers, compress=True, cfg=None, tag="latest"):
    """An OCI image layout directory; compress: True (gzip), False, "zstd",
    or a function of a layer giving (blob, media type suffix)."""
    blobs = os.path.join(outdir, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)

    def put(data):
        h = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, h), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + h, "size": len(data)}

    descs = []
    for x in layers:
        if callable(compress):
            data, suffix = compress(x)
        else:
            how = compress if isinstance(compress, str) else ("gzip" if compress else "none")
            data, suffix = compress_layer(x, how)
        d = put(data)
        d["mediaType"] = "application/vnd.oci.image.layer.v1.tar" + suffix
        descs.append(d)
    c = put(cfg if cfg is not None else config_json(layers))
    c["mediaType"] = "application/vnd.oci.image.config.v1+json"
    man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": c, "layers": descs}
    m = put(json.dumps(man).encode())
    m["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    m["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(outdir, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


def hostile(kind, out, arg):
    base = busybox_base()
    if kind == "traversal":
        layers = [tar_bytes(base + [("../../../../../../" + arg.lstrip("/"), "file", b"pwned\n", 0o644)])]
    elif kind == "absolute":
        layers = [tar_bytes(base + [(arg, "file", b"pwned\n", 0o644)])]
    elif kind == "symlink-escape":
        # A symlink to a host directory, then a file "through" it.
        layers = [tar_bytes(base + [("esc", "sym", arg, 0o777),
                                    ("esc/pwned", "file", b"pwned\n", 0o644)])]
    elif kind == "symlink-escape-layers":
        # The same across two layers: the link in one, the write in the next.
        layers = [tar_bytes(base + [("esc", "sym", arg, 0o777)]),
                  tar_bytes([("esc/pwned", "file", b"pwned\n", 0o644)])]
    elif kind == "hardlink-escape":
        layers = [tar_bytes(base + [("h", "hard", arg, 0o644)])]
    elif kind == "hardlink-dotdot":
        layers = [tar_bytes(base + [("h", "hard", "../../../../../../" + arg.lstrip("/"), 0o644)])]
    elif kind == "setuid":
        bb = open(BUSYBOX, "rb").read()
        layers = [tar_bytes(base + [("bin/suid", "file", bb, 0o4755),
                                    ("bin/sgid", "file", bb, 0o2755)])]
    elif kind == "device":
        layers = [tar_bytes(base + [("dev-evil", "chr", None, 0o666)])]
    elif kind == "bomb":
        # arg MB of zeros: tiny compressed, large unpacked.
        mb = int(arg)
        raw = tar_bytes(base + [("zeros", "file", b"\0" * (mb << 20), 0o644)])
        write_oci(out, [raw], compress=True)
        return
    elif kind in ("zstd-cut", "zstd-window", "zstd-bomb"):
        # OCI layouts (directories) whose blobs match their digests but
        # whose zstd streams end inside a frame, ask for a 2 GiB window,
        # or unpack to arg MB of zeros.
        raw = tar_bytes(base + [("zeros", "file", b"\0" * (int(arg or 1) << 20), 0o644)])
        if kind == "zstd-window":
            blob = subprocess.run(["zstd", "-q", "-c", "--long=31"], input=raw,
                                  capture_output=True, check=True).stdout
        else:
            blob = zstd_frames(raw)
            if kind == "zstd-cut":
                blob = blob[:len(blob) - 7]
        write_oci(out, [raw], compress=lambda _: (blob, "+zstd"))
        return
    elif kind == "many":
        layers = [tar_bytes(base + [("f%05d" % i, "file", b"x", 0o644) for i in range(int(arg))])]
    elif kind == "bad-diffid":
        layers = [tar_bytes(base)]
        cfg = json.loads(config_json(layers))
        cfg["rootfs"]["diff_ids"] = ["sha256:" + "0" * 64]
        write_docker(out, layers, json.dumps(cfg).encode())
        return
    elif kind == "not-an-archive":
        with open(out, "wb") as f:
            f.write(b"this is not a tar archive\n" * 100)
        return
    else:
        sys.exit("unknown hostile kind " + kind)
    write_docker(out, layers)


def pack_rootfs(src, out, shift):
    """Tar a root filesystem, moving owners down by `shift` (a root
    caller's layers are owned by the cell id range)."""
    def fix(ti):
        ti.uid = ti.uid - shift if ti.uid >= shift else ti.uid
        ti.gid = ti.gid - shift if ti.gid >= shift else ti.gid
        ti.uname = ti.gname = ""
        return ti
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(src)):
            t.add(os.path.join(src, name), arcname=name, filter=fix)


def oci_from_tar(tarpath, outdir, env):
    layer = open(tarpath, "rb").read()
    cfg = {"Env": env, "WorkingDir": "/testbed", "Cmd": ["/bin/sh"]}
    write_oci(outdir, [layer], compress=True, cfg=config_json([layer], cfg))


# ---- a registry token service (Docker registry v2 bearer tokens) ----

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenHandler(http.server.BaseHTTPRequestHandler):
    """Signs tokens for any scope, except repositories under private/: those
    need Basic USER:PASS (GET) or the refresh token (OAuth2 POST)."""
    key = cert_der = service = issuer = log = None
    userpass = refresh = None

    def answer(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def allowed(self, scopes, basic, refresh):
        private = any(sc.split(":")[1].startswith("private/") for sc in scopes if sc.count(":") >= 2)
        if not private:
            return True
        if refresh is not None:
            return self.refresh is not None and refresh == self.refresh
        want = base64.b64encode((self.userpass or "").encode()).decode()
        return self.userpass is not None and basic == "Basic " + want

    def grant(self, q, basic, refresh, field):
        with open(self.log, "a") as f:
            f.write("%s %s auth=%s\n" % (self.command, self.path,
                                         "refresh" if refresh else ("basic" if basic else "none")))
        if q.get("service", [""])[0] != self.service:
            return self.answer(400)
        scopes = q.get("scope", [])
        if not self.allowed(scopes, basic, refresh):
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}')
        access = []
        for scope in scopes:
            typ, name, actions = scope.split(":", 2)
            access.append({"type": typ, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {"iss": self.issuer, "sub": "anonymous", "aud": self.service, "exp": now + 600,
                  "nbf": now - 60, "iat": now, "jti": str(now) + str(os.getpid()), "access": access}
        signing_input = (b64url(json.dumps(header).encode()) + "." +
                         b64url(json.dumps(claims).encode())).encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                             input=signing_input, capture_output=True, check=True).stdout
        token = signing_input.decode() + "." + b64url(sig)
        self.answer(200, json.dumps({field: token, "expires_in": 600}).encode())

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        if u.path != "/token":
            return self.answer(404)
        self.grant(urllib.parse.parse_qs(u.query), self.headers.get("Authorization"), None, "token")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        q = urllib.parse.parse_qs(self.rfile.read(min(n, 65536)).decode())
        if urllib.parse.urlparse(self.path).path != "/token" or \
                q.get("grant_type", [""])[0] != "refresh_token":
            return self.answer(400)
        self.grant(q, None, q.get("refresh_token", [""])[0], "access_token")

    def log_message(self, *a):
        pass


def token_server(port, key, cert, service, issuer, log, userpass=None, refresh=None):
    der = subprocess.run(["openssl", "x509", "-in", cert, "-outform", "DER"],
                         capture_output=True, check=True).stdout
    TokenHandler.key, TokenHandler.cert_der = key, der
    TokenHandler.service, TokenHandler.issuer, TokenHandler.log = service, issuer, log
    TokenHandler.userpass, TokenHandler.refresh = userpass, refresh
    http.server.HTTPServer(("127.0.0.1", int(port)), TokenHandler).serve_forever()


class RateLimitHandler(http.server.BaseHTTPRequestHandler):
    """Answers everything as Docker Hub does past its pull limit."""
    def do_GET(self):
        body = (b'{"errors":[{"code":"TOOMANYREQUESTS","message":"You have reached your '
                b'pull rate limit. \\u001b[31mupgrade"}]}')
        self.send_response(429)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "17")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def ratelimit_server(port):
    http.server.HTTPServer(("127.0.0.1", port), RateLimitHandler).serve_forever()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "docker":
        write_docker(args[0], two_layers())
    elif cmd == "dpkg":
        write_docker(args[0], [tar_bytes(dpkg_image(args[1] if len(args) > 1 else None))])
    elif cmd == "docker-cmd":  # OUT [none]: ENTRYPOINT and CMD, or neither
        cfg = {"Env": ["PATH=/bin", "GREETING=hello"], "WorkingDir": "/etc"}
        if len(args) < 2:
            cfg.update(Entrypoint=["/bin/sh", "-c"], Cmd=['echo "$GREETING from $(pwd) as $(id -u)"'])
        ls = [tar_bytes(busybox_base())]
        write_docker(args[0], ls, config_json(ls, cfg))
    elif cmd == "owners":
        write_docker(args[0], owners(args[1]))
    elif cmd == "oci":
        write_oci(args[0], two_layers(), compress=True)
    elif cmd == "oci-many":
        write_oci(args[0], many_layers(int(args[1])), compress=True)
    elif cmd == "oci-many-flat":
        write_oci(args[0], flat(many_layers(int(args[1]))), compress=True)
    elif cmd == "oci-big":
        write_oci(args[0], big_layers(int(args[1]), int(args[2])),
                  compress=lambda x: (gzip.compress(x, compresslevel=1), "+gzip"))
    elif cmd == "oci-zstd":
        write_oci(args[0], two_layers(), compress="zstd")
    elif cmd == "hostile":
        hostile(args[0], args[1], args[2] if len(args) > 2 else "")
    elif cmd == "pack-rootfs":
        pack_rootfs(args[0], args[1], int(args[2]))
    elif cmd == "oci-from-tar":
        oci_from_tar(args[0], args[1], args[2:])
    elif cmd == "token-server":
        token_server(*args)
    elif cmd == "ratelimit-server":
        ratelimit_server(int(args[0]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
