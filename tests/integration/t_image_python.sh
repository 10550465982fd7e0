#!/usr/bin/env bash
# ctest-timeout: 2400
# sandcell image build python: the LLM-in-Sandbox environment (Debian's
# python3 scientific stack), and what an agent does in it. Root only, to
# keep the suite's time down (the build is the longest test).
. "$(dirname "$0")/../lib.sh"

[ "$SANDCELL_TEST_AS" = root ] || { echo "skip: the python image is built in the root run only"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "skip: mmdebstrap is not installed"; exit 77; }
# The build is mmdebstrap's work; sandcell's part (the extractor) runs under
# the sanitizers in t_image_build and t_image_import. Spare the ASan pass
# the longest test.
if ldd "$SANDCELL" 2>/dev/null | grep -q libasan; then
	echo "skip: the python image is built in the non-sanitizer pass only"
	exit 77
fi
. "$(dirname "$0")/image_cache.sh"
export T_EXTRA_ENV="SANDCELL_RECIPES=$SRCDIR/scripts/images SANDCELL_APT_CACHE=$IMG_CACHE/apt-python"
DATA="$SANDCELL_ROOT/data"

start=$(date +%s)
sc image build python
echo "# python image built in $(($(date +%s) - start)) s"
check "image build python succeeds" expect_rc 0
[ "$RC" -eq 0 ] || { printf '%s\n' "$ERR" | tail -20; finish; exit; }
printf '%s\n' "$ERR" | grep "built image"

sc run --image python -- python3 -c 'import numpy, scipy, sympy, matplotlib, mpmath, pandas, chardet, IPython; print("imports ok")'
check "numpy, scipy, sympy, matplotlib, mpmath, pandas, chardet and IPython import" out_is "imports ok"

out="$T_WORK/output"
mkdir -p "$out"
cat >"$T_WORK/plot.py" <<'PY'
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
x = np.linspace(0, 2 * np.pi, 100)
plt.plot(x, np.sin(x))
plt.savefig("/testbed/output/sine.png")
print(matplotlib.get_backend())
PY
sc run --image python -v "$out:/testbed/output" -v "$T_WORK/plot.py:/testbed/plot.py:ro" -- python3 plot.py
check "matplotlib uses the Agg backend in the cell" out_is agg
check "a script saves a PNG into /testbed/output" \
	bash -c '[ "$(head -c 4 "'"$out"'/sine.png" | od -An -c | tr -d " ")" = "211PNG" ]'

sc run --image python -- sh -c '
	mkdir -p /tmp/pkg/hello && echo "def hi(): return 42" >/tmp/pkg/hello/__init__.py &&
	printf "from setuptools import setup\nsetup(name=\"hello\", version=\"1.0\", packages=[\"hello\"])\n" >/tmp/pkg/setup.py &&
	pip install -q --no-index --no-build-isolation /tmp/pkg >/dev/null 2>&1 && python3 -c "import hello; print(hello.hi())"'
check "pip installs a package into the cell" out_is 42
sc run --image python -- sh -c 'cd /testbed && git init -q . && git config user.email a@b && git config user.name a && echo x >f && git add f && git commit -qm x && git log --oneline | wc -l; gcc --version >/dev/null && echo gcc; curl --version >/dev/null && echo curl'
check "git, gcc and curl work in /testbed" out_is "$(printf '1\ngcc\ncurl')"

sc image ls --json
check "the image is about a gigabyte" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
i=[x for x in json.load(sys.stdin) if x[\"name\"]==\"python\"][0]
assert i[\"size\"] > 500e6, i; print(round(i[\"size\"]/1e9, 2), \"GB\", file=sys.stderr)
"' "$OUT"

sc image rm python
check "image rm removes it" bash -c '[ '$RC' -eq 0 ] && [ -z "$(ls -A '"$DATA"'/layers)" ]'
finish
