"""Package fixtures for t_code_libs.sh, written with the standard library
only: a PyPI-style "simple" index with one pure-Python wheel, and an npm
registry document with one tarball, a Go module proxy with one module
and a CRAN-like repository with one R source package, in one directory that a plain
`python3 -m http.server` serves. usage: ROOT BASE_URL
(BASE_URL: how the cell reaches the server, e.g. http://pkgs.test:PORT)."""
import base64
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile

root, base = sys.argv[1:3]


def b64(d):
    return base64.urlsafe_b64encode(d).rstrip(b"=").decode()


def wheel(name, ver):
    info = f"{name}-{ver}.dist-info"
    files = {
        f"{name}/__init__.py": f"VALUE = 'from {name} {ver}'\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: sandcell-test\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{p},sha256={b64(hashlib.sha256(t.encode()).digest())},{len(t.encode())}"
              for p, t in files.items()]
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    whl = f"{name}-{ver}-py3-none-any.whl"
    os.makedirs(f"{root}/packages", exist_ok=True)
    os.makedirs(f"{root}/simple/{name}", exist_ok=True)
    with zipfile.ZipFile(f"{root}/packages/{whl}", "w", zipfile.ZIP_DEFLATED) as z:
        for p, t in files.items():
            z.writestr(p, t)
    with open(f"{root}/simple/{name}/index.html", "w") as f:
        f.write(f'<!DOCTYPE html><html><body><a href="../../packages/{whl}">{whl}</a></body></html>\n')


def npm(name, ver):
    files = {"package/package.json": json.dumps({"name": name, "version": ver, "main": "index.js"}),
             "package/index.js": f"module.exports = 'from {name} {ver}';\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p, s in files.items():
            b = s.encode()
            ti = tarfile.TarInfo(p)
            ti.size = len(b)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(b))
    tgz = buf.getvalue()
    os.makedirs(f"{root}/-", exist_ok=True)
    os.makedirs(f"{root}/{name}", exist_ok=True)
    with open(f"{root}/-/{name}-{ver}.tgz", "wb") as f:
        f.write(tgz)
    dist = {"tarball": f"{base}/-/{name}-{ver}.tgz", "shasum": hashlib.sha1(tgz).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}
    doc = {"name": name, "dist-tags": {"latest": ver},
           "versions": {ver: {"name": name, "version": ver, "main": "index.js", "dist": dist}}}
    # the server answers /NAME with a redirect to /NAME/ and this file
    with open(f"{root}/{name}/index.html", "w") as f:
        json.dump(doc, f)


def goproxy(mod, ver):
    """GOPROXY protocol: MOD/@v/list, VER.info, VER.mod, VER.zip (files under MOD@VER/)."""
    d = f"{root}/{mod}/@v"
    os.makedirs(d, exist_ok=True)
    gomod = f"module {mod}\n\ngo 1.16\n"
    pkg = mod.rsplit("/", 1)[1]
    src = f'package {pkg}\n\nfunc Value() string {{ return "from {mod} {ver}" }}\n'
    with open(f"{d}/list", "w") as f:
        f.write(ver + "\n")
    with open(f"{d}/{ver}.info", "w") as f:
        json.dump({"Version": ver, "Time": "2024-01-01T00:00:00Z"}, f)
    with open(f"{d}/{ver}.mod", "w") as f:
        f.write(gomod)
    with zipfile.ZipFile(f"{d}/{ver}.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{mod}@{ver}/go.mod", gomod)
        z.writestr(f"{mod}@{ver}/{pkg}.go", src)


def cran(name, ver):
    """A CRAN-like repository: src/contrib/PACKAGES(.gz) and one source package."""
    d = f"{root}/src/contrib"
    os.makedirs(d, exist_ok=True)
    files = {
        f"{name}/DESCRIPTION": f"Package: {name}\nVersion: {ver}\nTitle: Test Fixture\n"
                               f"Description: A package for sandcell's tests.\nLicense: MIT\n"
                               f"Author: sandcell\nMaintainer: sandcell <test@example.test>\n",
        f"{name}/NAMESPACE": "export(value)\n",
        f"{name}/R/value.R": f'value <- function() "from {name} {ver}"\n',
    }
    with tarfile.open(f"{d}/{name}_{ver}.tar.gz", "w:gz") as t:
        for p, s in files.items():
            b = s.encode()
            ti = tarfile.TarInfo(p)
            ti.size = len(b)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(b))
    idx = f"Package: {name}\nVersion: {ver}\nLicense: MIT\nNeedsCompilation: no\n\n"
    with open(f"{d}/PACKAGES", "w") as f:
        f.write(idx)
    with gzip.open(f"{d}/PACKAGES.gz", "wt") as f:
        f.write(idx)


wheel("scpkgfixture", "1.0")
npm("scjsfixture", "1.0.0")
goproxy("example.test/scfix", "v1.0.0")
cran("scrfix", "1.0")
