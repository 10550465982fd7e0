#!/usr/bin/env bash
# sandcell code --libraries through the egress allowlist: a PyPI-style
# index and an npm registry (tests/integration/code_index_fixture.py, made
# here with the standard library) served by `python3 -m http.server` on the
# host's loopback; a policy names that host:port in its allowlist, maps the
# name to 127.0.0.1 and points pip and npm at it (PIP_INDEX_URL,
# PIP_TRUSTED_HOST, npm_config_registry); pip and npm inside the cell go
# through the cell's proxy. Go's module proxy (GOPROXY, GOSUMDB=off: the
# fixture's module has no checksum database) and a CRAN-like repository
# (SANDCELL_CRAN) come from the same server. Nothing leaves the host.
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
         "npm_config_registry": "$BASE/",
         "GOPROXY": "$BASE", "GOSUMDB": "off", "SANDCELL_CRAN": "$BASE"}}
JSON
chmod 644 "$T_DIR/pkgs.json"
sc policy check "$T_DIR/pkgs.json"
check "the index policy is valid" expect_rc 0

src() { cat >"$T_DIR/$1"; chmod 644 "$T_DIR/$1"; }
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

# --- go: go get through the cell's GOPROXY, the offline build finds it ---
if command -v go >/dev/null; then
	printf 'package main\n\nimport (\n\t"fmt"\n\t"example.test/scfix"\n)\n\nfunc main() { fmt.Println(scfix.Value()) }\n' | src usego.go
	sc code run --lang go --policy "$T_DIR/pkgs.json" "$T_DIR/usego.go"
	check "go: without --libraries the module is not there" bash -c '[ "$RC" -ne 0 ]'
	sc code run --lang go --policy "$T_DIR/pkgs.json" --libraries example.test/scfix@v1.0.0 "$T_DIR/usego.go"
	check "go: --libraries installs the module through the allowlist" out_is "from example.test/scfix v1.0.0"
	check "the proxy served the module zip" grep -q 'GET /example.test/scfix/@v/v1.0.0.zip' "$T_DIR/index.log"
	sc code run --lang go --policy "$T_DIR/pkgs.json" --libraries example.test/scfix "$T_DIR/usego.go"
	check "go: a module path without a version takes the proxy's latest" out_is "from example.test/scfix v1.0.0"
	sc code run --lang go --policy "$T_DIR/pkgs.json" --libraries example.test/nosuch "$T_DIR/usego.go"
	check "go: a module the proxy does not have: 125, go get failed" bash -c \
		'[ "$RC" -eq 125 ] && grep -q "go get install failed.*example.test/nosuch" <<<"$ERR"'
	sc code run --lang go --policy "$T_DIR/pkgs.json" --net none --libraries example.test/scfix "$T_DIR/usego.go"
	check "go: --net none: 125 and the no-network error naming proxy.golang.org" bash -c \
		'[ "$RC" -eq 125 ] && grep -q "example.test/scfix not installed in the cell, and the cell has no network.*proxy.golang.org" <<<"$ERR"'
else
	echo "skip - go (no go on this host)"
fi

# --- R: install.packages from SANDCELL_CRAN into the cell's library ---
if command -v Rscript >/dev/null; then
	printf 'library(scrfix)\ncat(value(), "\\n", sep = "")\n' | src user.R
	sc code run --lang r --policy "$T_DIR/pkgs.json" "$T_DIR/user.R"
	check "R: without --libraries the package is not there" bash -c '[ "$RC" -ne 0 ]'
	sc code run --lang r --policy "$T_DIR/pkgs.json" --libraries scrfix,stats "$T_DIR/user.R"
	check "R: --libraries installs the package through the allowlist" out_is "from scrfix 1.0"
	check "the repository served the source package" grep -q 'GET /src/contrib/scrfix_1.0.tar.gz' "$T_DIR/index.log"
	check "R: a base package (stats) is not fetched" bash -c "! grep -q 'GET /src/contrib/stats' '$T_DIR/index.log'"
	printf 'cat(stats::median(c(1, 5, 9)), "\\n", sep = "")\n' | src base.R
	sc code run --lang r --policy "$T_DIR/pkgs.json" --net none --libraries stats "$T_DIR/base.R"
	check "R: an installed package needs no network" out_is "5"
	sc code run --lang r --policy "$T_DIR/pkgs.json" --libraries scnosuch "$T_DIR/user.R"
	check "R: a package the repository does not have: 125 and the name" bash -c \
		'[ "$RC" -eq 125 ] && grep -q "R install failed.*scnosuch" <<<"$ERR"'
	sc code run --lang r --policy "$T_DIR/pkgs.json" --net none --libraries scrfix "$T_DIR/user.R"
	check "R: --net none: 125 and the no-network error naming cloud.r-project.org" bash -c \
		'[ "$RC" -eq 125 ] && grep -q "scrfix not installed in the cell, and the cell has no network.*cloud.r-project.org" <<<"$ERR"'
else
	echo "skip - R (no Rscript on this host)"
fi

# --- a language without an install step, and a bad name ---
printf 'echo hi\n' | src hi.sh
sc code run --lang bash --libraries jq "$T_DIR/hi.sh"
check "bash: --libraries refused with the languages that take it" bash -c \
	'[ "$RC" -eq 125 ] && grep -q "not supported for bash (python, javascript, typescript, ruby, go, r)" <<<"$ERR"'
sc code run --lang r --libraries 'a;b' "$T_DIR/user.R"
check "a bad library name is refused before any cell" bash -c \
	'[ "$RC" -eq 125 ] && grep -q "not a library name" <<<"$ERR"'

finish
