#!/usr/bin/env bash
# The Python client (python/, standard library only) against real cells:
# its unittest suite (python/tests) run by Debian's /usr/bin/python3 under
# pytest and by the caller's python3 (e.g. pyenv's) under unittest, both at
# once; `pip install ./python` into a scratch directory; and no cell and no
# server left behind afterwards.
# ctest-timeout: 600
# The caller's python3, resolved before lib.sh resets PATH to the system's.
CALLER_PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
cp -r "$SRC/python" "$T_DIR/python"
find "$T_DIR/python" -name __pycache__ -prune -exec rm -rf {} +
chmod -R a+rX "$T_DIR/python"
# the suite finds the binary through SANDCELL_BIN; private servers live in
# the test user's TMPDIR
T_EXTRA_ENV="SANDCELL_BIN=$SC_BIN PYTHONPATH=$T_DIR/python PYTHONDONTWRITEBYTECODE=1 TMPDIR=$T_WORK"

if ! /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
	RC=1 OUT= ERR="no pytest for /usr/bin/python3: apt-get install python3-pytest"
	fail "Debian's python3 has pytest"
	finish
	exit
fi

as_user /usr/bin/python3 -m pytest -q -p no:cacheprovider "$T_DIR/python/tests" \
	>"$T_WORK/pytest.out" 2>&1 &
PYTEST=$!
OTHER=
if [ -n "$CALLER_PY" ] && [ "$CALLER_PY" != /usr/bin/python3 ] &&
	[ "$(as_user "$CALLER_PY" -c 'import sys; print(sys.executable)' 2>/dev/null)" = "$CALLER_PY" ]; then
	OTHER=$CALLER_PY
	as_user "$OTHER" -m unittest discover -s "$T_DIR/python/tests" >"$T_WORK/unittest.out" 2>&1 &
	UNITTEST=$!
fi

wait "$PYTEST"
RC=$? OUT=$(tail -n 60 "$T_WORK/pytest.out") ERR=
check "the suite passes under /usr/bin/python3 -m pytest" expect_rc 0
if [ -n "$OTHER" ]; then
	wait "$UNITTEST"
	RC=$? OUT=$(tail -n 60 "$T_WORK/unittest.out") ERR=
	check "the suite passes under $OTHER -m unittest discover" expect_rc 0
else
	echo "skip - a second interpreter (the caller's python3 is /usr/bin/python3 or not runnable as $SANDCELL_TEST_AS)"
fi

# pip install ./python: from a copy, without the network, into a target
PIP_PY=
for py in "$OTHER" /usr/bin/python3; do
	if [ -n "$py" ] && as_user "$py" -c 'import setuptools, pip, wheel' 2>/dev/null; then
		PIP_PY=$py
		break
	fi
done
if [ -n "$PIP_PY" ]; then
	cp -r "$SRC/python" "$T_WORK/src"
	chmod -R a+rwX "$T_WORK/src"
	as_user env HOME="$T_WORK" "$PIP_PY" -m pip install --quiet --no-deps --no-build-isolation \
		--no-index --target "$T_WORK/site" "$T_WORK/src" >"$T_WORK/pip.out" 2>&1
	RC=$? OUT=$(tail -n 20 "$T_WORK/pip.out") ERR=
	check "pip install ./python ($PIP_PY)" expect_rc 0
	T_EXTRA_ENV="SANDCELL_BIN=$SC_BIN PYTHONPATH=$T_WORK/site TMPDIR=$T_WORK"
	OUT=$(cd / && as_user "$PIP_PY" -c 'import sandcell
with sandcell.SandboxSession() as s:
    print(s.run("print(6 * 7)").stdout, end="")' 2>&1)
	RC=$?
	check "the installed package runs code in a cell" out_is 42
else
	echo "skip - pip install (no interpreter with pip, setuptools and wheel: apt-get install python3-pip)"
fi

check "no cell is left" no_cells
check "no private server is left" no_process_with "$SC_BIN serve --listen unix:$T_WORK/"
finish
