#!/usr/bin/env bash
# scripts/sandboxfusion_suite.sh SANDBOXFUSION_CHECKOUT [PYTEST ARGS...]
#
# Runs SandboxFusion's own runner tests (SANDBOXFUSION_CHECKOUT/sandbox/
# tests/runners/test_*.py, copied unchanged with their samples) against a
# real `sandcell serve` on 127.0.0.1: tests/sandboxfusion/ stands in for
# FastAPI's TestClient (the same request over HTTP) and for SandboxFusion's
# request/response models. Prints pytest's report, then passed / failed /
# skipped per runner file and in all. Needs python3 with pytest (Debian:
# python3-pytest); the languages' toolchains are the host's
# (scripts/packages.txt). Not run by CI (it needs the checkout).
#
#   SANDCELL=PATH   the binary (default: build/sandcell of this checkout)
#   POOL=N          serve --pool (default 4)
# Exit status: pytest's (0: every test passed).
set -u
# the system's python3 and tools (Debian's pytest), not a pyenv shim
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [ $# -lt 1 ] || [ ! -d "$1/sandbox/tests/runners" ]; then
	echo "usage: $0 SANDBOXFUSION_CHECKOUT [PYTEST ARGS...] (a checkout of github.com/bytedance/SandboxFusion)" >&2
	exit 2
fi
CHECKOUT=$(cd "$1" && pwd)
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SANDCELL=${SANDCELL:-$ROOT/build/sandcell}
[ -x "$SANDCELL" ] || { echo "$0: no sandcell binary at $SANDCELL (build first, or set SANDCELL)" >&2; exit 2; }
python3 -c 'import pytest' 2>/dev/null || { echo "$0: python3 has no pytest (Debian: apt-get install python3-pytest)" >&2; exit 2; }

W=$(mktemp -d /tmp/sandboxfusion-suite.XXXXXX)
SERVER=
cleanup() {
	if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then
		kill -TERM "$SERVER"
		for _ in $(seq 300); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
	fi
	SANDCELL_ROOT="$W/root" "$SANDCELL" gc >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$W/tests/runners"
cp "$CHECKOUT"/sandbox/tests/runners/test_*.py "$W/tests/runners/"
[ -d "$CHECKOUT/sandbox/tests/runners/samples" ] && cp -r "$CHECKOUT/sandbox/tests/runners/samples" "$W/tests/runners/"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/token"
chmod 600 "$W/token"

export SANDCELL_ROOT="$W/root"
"$SANDCELL" serve --listen 127.0.0.1:0 --token-file "$W/token" --port-file "$W/port" \
	--pool "${POOL:-4}" >"$W/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 600); do [ -s "$W/port" ] && break; kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
if [ ! -s "$W/port" ]; then
	echo "$0: sandcell serve did not start:" >&2
	cat "$W/serve.log" >&2
	exit 1
fi
export SANDCELL_URL="http://127.0.0.1:$(cat "$W/port")" SANDCELL_TOKEN
SANDCELL_TOKEN=$(cat "$W/token")
echo "# sandcell serve at $SANDCELL_URL; SandboxFusion $(git -C "$CHECKOUT" rev-parse --short HEAD 2>/dev/null || echo checkout)"

(cd "$W/tests/runners" && PYTHONPATH="$ROOT/tests/sandboxfusion" python3 -m pytest \
	-p no:cacheprovider -q -rfEs -o junit_family=xunit1 --junitxml="$W/report.xml" \
	-W ignore::pytest.PytestUnknownMarkWarning test_*.py "$@")
RC=$?

python3 - "$W/report.xml" <<'PY'
import collections, sys, xml.etree.ElementTree as ET
counts = collections.OrderedDict()
for tc in ET.parse(sys.argv[1]).iter("testcase"):
    f = (tc.get("file") or tc.get("classname", "?").split(".")[0]).rsplit("/", 1)[-1]
    f = f if f.endswith(".py") else f + ".py"
    c = counts.setdefault(f, [0, 0, 0])
    if tc.find("skipped") is not None:
        c[2] += 1
    elif tc.find("failure") is not None or tc.find("error") is not None:
        c[1] += 1
    else:
        c[0] += 1
print("\n%-28s %7s %7s %7s" % ("runner file", "passed", "failed", "skipped"))
tot = [0, 0, 0]
for f, c in sorted(counts.items()):
    print("%-28s %7d %7d %7d" % (f, *c))
    tot = [a + b for a, b in zip(tot, c)]
print("%-28s %7d %7d %7d" % ("total", *tot))
PY
exit $RC
