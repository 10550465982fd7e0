#!/usr/bin/env bash
# --user: a cell's commands as a non-root user of the cell. Commands never
# hold a capability (CapEff 0 for root and for users), have the asked ids
# in /proc/self/status, and a user cannot write a root-owned 0755
# directory. A root caller's cells map a range of ids; a rootless cell maps
# only 0, so there any other id is refused in one line. The same through
# exec --user, the HTTP API's "user", and names from the image's passwd.
# ctest-timeout: 600
. "$(dirname "$0")/../lib.sh"

ids='grep -E "^(Uid|Gid|CapInh|CapPrm|CapEff|CapAmb):" /proc/self/status | tr -s "\t" " "'
status_of() { # UID GID: the lines $ids prints for a command with no capabilities
	printf 'Uid: %s %s %s %s\nGid: %s %s %s %s\nCapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapAmb: 0000000000000000' \
		"$1" "$1" "$1" "$1" "$2" "$2" "$2" "$2"
}

sc run -- sh -c "$ids"
check "a root command (no --user) has uid/gid 0 and no capabilities" out_is "$(status_of 0 0)"
sc run --user 0 -- sh -c "$ids"
check "--user 0 is root, with no capabilities" out_is "$(status_of 0 0)"

sc run --help
check "run --help lists --user" out_has "--user UID\[:GID\]"
sc exec --help
check "exec --help lists --user" out_has "--user UID\[:GID\]"
sc run --user 1:2:3 -- true
check "a bad --user is refused (125)" expect_rc 125
check "... in one line" err_one_line
check "... saying what is expected" err_has "expected UID"
sc run --user 4294967295 -- true
check "an id of 2^32-1 is refused (125)" expect_rc 125

if [ "$SANDCELL_TEST_AS" = root ]; then
	sc run --user 1000 -- sh -c "$ids"
	check "--user 1000: uid and gid 1000, no capabilities" out_is "$(status_of 1000 1000)"
	sc run --user 1000:2000 -- sh -c "$ids; id -G"
	check "--user 1000:2000: gid 2000 and no other group" out_is "$(status_of 1000 2000; printf '\n2000')"
	sc run --user 1000 -- sh -c 'mkdir -p /testbed/x 2>/dev/null; echo $?; touch /etc/x 2>/dev/null; echo $?; ls -ld /testbed | cut -c1-10'
	check "a user command cannot write the root-owned 0755 /testbed or /etc" out_is "$(printf '1\n1\ndrwxr-xr-x')"
	sc run --user 1000 -- sh -c 'echo hi >/tmp/f && stat -c %u:%g /tmp/f'
	check "... and what it makes is its own" out_is 1000:1000
	sc run --user nobody -- id -u
	check "a name is looked up in the image's /etc/passwd" out_is "$(id -u nobody)"
	sc run --user no-such-user-x -- id -u
	check "an unknown name is refused (125) in one line" bash -c '[ '$RC' -eq 125 ] && [ "$(printf "%s\n" "$0" | grep -c .)" -eq 1 ] && grep -q "not in the image" <<<"$0"' "$ERR"
	sc run --user 70000 -- id -u
	check "an id beyond the cell's range is refused (125)" expect_rc 125
	check "... saying it is not mapped" err_has "uid 70000 is not mapped in this cell"
	sc run --json --user 1000 -- id -u
	check "--json output is unaffected" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
r=json.load(sys.stdin)
assert r[\"exit_code\"]==0 and r[\"stdout\"]==\"1000\n\", r"' "$OUT"

	# a long-lived cell: its user is its execs' default, exec --user overrides
	sc create --user 1000 u1
	check "create --user 1000" expect_rc 0
	sc exec u1 -- sh -c "$ids"
	check "its commands run as 1000 with no capabilities" out_is "$(status_of 1000 1000)"
	sc exec --user 0 u1 -- sh -c "$ids; mkdir -m 755 /rootdir && echo made"
	check "exec --user 0 runs as root, with no capabilities" out_is "$(status_of 0 0; printf '\nmade')"
	sc exec u1 -- sh -c 'touch /rootdir/f 2>/dev/null; echo $?'
	check "the user cannot write the root-owned 0755 dir root made" out_is 1
	sc exec -u 1001:1002 u1 -- sh -c "$ids"
	check "exec -u 1001:1002 for one command" out_is "$(status_of 1001 1002)"
	sc exec -u 99999 u1 -- true
	check "exec with an unmapped id fails (125)" expect_rc 125
	check "... saying so in one line" bash -c 'grep -q "uid 99999 is not mapped" <<<"$0" && [ "$(printf "%s\n" "$0" | grep -c .)" -eq 1 ]' "$ERR"
	sc cp "$T_DIR/sandcell" u1:/tmp/copied
	sc exec u1 -- stat -c %u /tmp/copied
	check "cp into a user cell still works (as the cell's root)" out_is 0
	sc rm -f u1
	sc create u2
	sc exec u2 -- sh -c "$ids"
	check "a cell without --user runs root commands with no capabilities" out_is "$(status_of 0 0)"
	sc exec --user 1000 u2 -- id -u
	check "... and exec --user 1000 in it" out_is 1000
	sc rm -f u2
else
	sc run --user 1000 -- id -u
	check "rootless: --user 1000 is refused (125)" expect_rc 125
	check "... in one line" err_one_line
	check "... saying the cell maps only 0" err_has "uid 1000 is not mapped in this cell (rootless cells map only 0"
	sc create u1
	sc exec --user 1000 u1 -- id -u
	check "rootless: exec --user 1000 is refused (125)" expect_rc 125
	check "... saying why" err_has "rootless cells map only 0"
	sc exec --user 0 u1 -- sh -c "$ids"
	check "rootless: exec --user 0 runs with no capabilities" out_is "$(status_of 0 0)"
	sc rm -f u1
fi

# --- the HTTP API: "user" at POST /cells and per exec ---
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
for _ in $(seq 1200); do [ -s "$T_WORK/port" ] && break; sleep 0.1; done
check "the server starts" test -s "$T_WORK/port"
cat >"$T_DIR/api.py" <<'PY'
import json, sys, urllib.request, urllib.error
url, token, method, path = sys.argv[1:5]
body = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
req = urllib.request.Request(url + path, method=method,
                             data=json.dumps(body).encode() if body is not None else None,
                             headers={"Authorization": "Bearer " + token})
try:
    with urllib.request.urlopen(req, timeout=120) as r:
        st, data = r.status, r.read()
except urllib.error.HTTPError as e:
    st, data = e.code, e.read()
print(st)
print(data.decode())
PY
api() { python3 "$T_DIR/api.py" "http://127.0.0.1:$(cat "$T_WORK/port")" "$TOKEN" "$@"; }
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().split("\n",1)[1])[sys.argv[1]])' "$1"; }

R=$(api POST /cells '{"user": "x1"}')
check "POST /cells with a bad user: 422" bash -c '[ "$(head -1 <<<"$0")" = 422 ] && grep -q "user: expected UID" <<<"$0"' "$R"
R=$(api POST /cells '{"user": 7}')
check "POST /cells with a user that is not a string: 422" bash -c '[ "$(head -1 <<<"$0")" = 422 ]' "$R"
if [ "$SANDCELL_TEST_AS" = root ]; then
	R=$(api POST /cells '{"user": "1000:1001"}')
	check "POST /cells with user 1000:1001: 201" bash -c '[ "$(head -1 <<<"$0")" = 201 ]' "$R"
	ID=$(field id <<<"$R")
	R=$(api POST "/cells/$ID/exec" "$(python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$ids")")
	check "its execs run as 1000:1001 with no capabilities" \
		bash -c '[ "$(printf "%s" "$0" | sed 1d | python3 -c "import json,sys; print(json.load(sys.stdin)[\"stdout\"], end=\"\")")" = "$1" ]' "$R" "$(status_of 1000 1001)"
	R=$(api POST "/cells/$ID/exec" '{"argv": ["id", "-u"], "user": "0"}')
	check "an exec's \"user\": \"0\" runs as root" bash -c 'grep -q "\"stdout\":\"0\\\\n\"" <<<"$0"' "$R"
	R=$(api POST "/cells/$ID/exec" '{"argv": ["id", "-u"], "user": "1:2:3"}')
	check "an exec's bad user: 422" bash -c '[ "$(head -1 <<<"$0")" = 422 ]' "$R"
	R=$(api POST "/cells/$ID/exec" '{"argv": ["id", "-u"], "user": "70000"}')
	check "an exec's unmapped user: 422 saying so" bash -c '[ "$(head -1 <<<"$0")" = 422 ] && grep -q "not mapped" <<<"$0"' "$R"
	api DELETE "/cells/$ID" >/dev/null
else
	R=$(api POST /cells '{"user": "1000"}')
	check "rootless: POST /cells with user 1000: 422, not mapped" bash -c '[ "$(head -1 <<<"$0")" = 422 ] && grep -q "not mapped" <<<"$0"' "$R"
fi
kill -TERM "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null
finish
