#!/usr/bin/env bash
# sandcell code --libraries through the egress allowlist: a PyPI-style
# index and an npm registry (tests/integration/code_index_fixture.py, made
# here with the standard library) served by `python3 -m http.server` on the
# host's loopback; a policy names that host:port in its allowlist, maps the
# name to 127.0.0.1 and points pip and npm at it (PIP_INDEX_URL,
# PIP_TRUSTED_HOST, npm_config_registry); pip and npm inside the cell go
# through the cell's proxy. Nothing leaves the host.
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

[ -x /usr/bin/python3 ] || { echo "# no /usr/bin/python3: skipped"; exit 77; }
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || { echo "# no pip for /usr/bin/python3 (python3-pip): skipped"; exit 77; }

S=libs$$
trap 'kill "$IDX_PID" 2>/dev/null; as_user "$SC_BIN" code session rm "$S" >/dev/null 2>&1; t_cleanup' EXIT
IDX="$T_DIR/index"
mkdir -p "$IDX"
# port 0: the kernel picks one; the server says which on its first line
/usr/bin/python3 -u -m http.server 0 --bind 127.0.0.1 -d "$IDX" >"$T_DIR/index.log" 2>&1 &
IDX_PID=$!
PORT=
for _ in $(seq 600); do
	PORT=$(sed -n 's/^Serving HTTP on .* port \([0-9][0-9]*\) .*/\1/p' "$T_DIR/index.log")
	[ -n "$PORT" ] && break
	kill -0 "$IDX_PID" 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || { echo "FAIL - the index server did not start: $(cat "$T_DIR/index.log")"; exit 1; }
BASE="http://pkgs.test:$PORT"
/usr/bin/python3 "$(dirname "$0")/code_index_fixture.py" "$IDX" "$BASE"
chmod -R a+rX "$IDX"

cat >"$T_DIR/pkgs.json" <<JSON
{"description": "the test's package index on loopback",
 "network": {"mode": "allowlist", "allow": ["pkgs.test:$PORT"], "hosts": {"pkgs.test": "127.0.0.1"}},
 "env": {"PIP_INDEX_URL": "$BASE/simple", "PIP_TRUSTED_HOST": "pkgs.test:$PORT",
         "npm_config_registry": "$BASE/"}}
JSON
chmod 644 "$T_DIR/pkgs.json"
sc policy check "$T_DIR/pkgs.json"
check "the index policy is valid" expect_rc 0

src() { cat >"$T_DIR/$1"; chmod 644 "$T_DIR/$1"; }
jget() {
	printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v) if not isinstance(v,str) else v, end="")' "$1"
}
export -f jget
printf 'import scpkgfixture\nprint(scpkgfixture.VALUE)\n' | src usepkg.py

# --- python: pip through the proxy ---
sc code run --lang python --policy "$T_DIR/pkgs.json" "$T_DIR/usepkg.py"
check "without --libraries the package is not there" bash -c '[ "$RC" -ne 0 ] && grep -q "No module named .scpkgfixture" <<<"$ERR"'
sc code run --lang python --policy "$T_DIR/pkgs.json" --libraries scpkgfixture --json "$T_DIR/usepkg.py"
check "--libraries installs from the index through the allowlist" bash -c \
	'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"]")" = "[\"Success\", \"from scpkgfixture 1.0\\n\"]" ]'
check "the index served the wheel" grep -q 'GET /packages/scpkgfixture-1.0-py3-none-any.whl' "$T_DIR/index.log"
sc code run --lang python --policy "$T_DIR/pkgs.json" --libraries scpkgfixture==9.9 "$T_DIR/usepkg.py"
check "a version the index does not have: 125" expect_rc 125
check "... and pip's reason in one line" bash -c \
	'[ "$(printf "%s\n" "$ERR" | grep -c .)" -eq 1 ] && grep -q "pip install failed" <<<"$ERR"'

# the cell without network: the same request is refused before pip runs
sc code run --lang python --policy "$T_DIR/pkgs.json" --net none --libraries scpkgfixture "$T_DIR/usepkg.py"
check "--net none: 125 and the no-network error naming the hosts" bash -c \
	'[ "$RC" -eq 125 ] && grep -q "scpkgfixture not installed in the cell, and the cell has no network" <<<"$ERR"'

# --- a session: installed once, there for later runs ---
sc code session start --policy "$T_DIR/pkgs.json" "$S"
check "session start with the index policy" expect_rc 0
printf 'import scpkgfixture\n' | src imp.py
sc code session run "$S" --libraries scpkgfixture "$T_DIR/imp.py"
check "session run --libraries installs it" expect_rc 0
printf 'scpkgfixture.VALUE\n' | src val.py
sc code session run "$S" "$T_DIR/val.py"
check "the session keeps the installed package" out_is "Out[2]: 'from scpkgfixture 1.0'"
sc code session rm "$S"

# --- javascript: npm through the proxy ---
if command -v node >/dev/null && command -v npm >/dev/null; then
	printf 'console.log(require("scjsfixture"))\n' | src usejs.js
	sc code run --lang javascript --policy "$T_DIR/pkgs.json" --libraries scjsfixture "$T_DIR/usejs.js"
	check "npm: --libraries installs from the registry through the allowlist" out_is "from scjsfixture 1.0.0"
	check "the registry served the tarball" grep -q 'GET /-/scjsfixture-1.0.0.tgz' "$T_DIR/index.log"
else
	echo "skip - npm (no node/npm on this host)"
fi

finish
