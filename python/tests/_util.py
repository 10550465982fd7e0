"""Shared by the tests: the package on sys.path, the host's languages."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from sandcell import _client  # noqa: E402

_langs = None


def languages():
    """Languages whose tools this host has (`sandcell code languages --json`)."""
    global _langs
    if _langs is None:
        out = subprocess.run([_client.find_binary(), "code", "languages", "--json"],
                             capture_output=True, text=True, timeout=60).stdout
        _langs = {l["name"] for l in json.loads(out) if l.get("available")}
    return _langs


def host_python_has(module):
    return subprocess.run(["/usr/bin/python3", "-c", "import " + module],
                          capture_output=True, timeout=60).returncode == 0


def wait_for(cond, timeout=60.0):
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()
