#!/usr/bin/env bash
# sandcell policy show|check, and --policy FILE as a user would check it.
. "$(dirname "$0")/../lib.sh"

P="$T_DIR/policies"
mkdir -p "$P"
chmod 755 "$P"
put() { # put NAME CONTENT: a policy file the test user can read
	printf '%s\n' "$2" >"$P/$1"
	chmod 644 "$P/$1"
}

# --- show and check ---
sc policy --help
check "policy --help exits 0" expect_rc 0
check "policy --help lists the built-ins" bash -c 'grep -q "^  default " <<<"$0" && grep -q "^  strict " <<<"$0"' "$OUT"

for name in default strict; do
	sc policy show "$name"
	check "policy show $name exits 0" expect_rc 0
	check "policy show $name prints JSON" bash -c 'python3 -c "import json,sys; json.loads(sys.argv[1])" "$0"' "$OUT"
	printf '%s\n' "$OUT" >"$P/$name.json"
	chmod 644 "$P/$name.json"
	sc policy check "$P/$name.json"
	check "policy check accepts what policy show $name prints" expect_rc 0
	printf '%s\n' "$OUT" >"$P/$name.effective.json"
	chmod 644 "$P/$name.effective.json"
	first=$OUT
	sc policy check "$P/$name.effective.json"
	check "policy check output of $name is stable (round trip)" out_is "$first"
done

sc policy show nope
check "policy show of an unknown name exits 125" expect_rc 125
check "... with one line" err_one_line
check "... starting with sandcell:" err_has "^sandcell: "

put bad_size.json '{"limits": {"memory": "lots"}}'
sc policy check "$P/bad_size.json"
check "invalid policy exits 125" expect_rc 125
check "invalid policy prints nothing on stdout" out_is ""
check "the error names the file, the JSON path and the expected form" bash -c '[ "$0" = "sandcell: $1/bad_size.json: limits.memory: expected a size like \"512M\", got \"lots\"" ]' "$ERR" "$P"

put unknown_key.json '{"limits": {"memroy": "1G"}}'
sc policy check "$P/unknown_key.json"
check "unknown key exits 125" expect_rc 125
check "unknown key error names limits.memroy" err_has "limits.memroy: unknown key"

put dup_syscall.json '{"seccomp": {"allow": ["read", "write", "read"]}}'
sc policy check "$P/dup_syscall.json"
check "duplicate syscall exits 125" expect_rc 125
check "duplicate syscall error names seccomp.allow[2]" err_has 'seccomp.allow\[2\]: duplicate syscall "read"'

put unknown_syscall.json '{"seccomp": {"allow": ["opne"]}}'
sc policy check "$P/unknown_syscall.json"
check "unknown syscall exits 125 with its path" bash -c '[ '"$RC"' -eq 125 ] && grep -q "seccomp.allow\[0\]: unknown syscall \"opne\"" <<<"$0"' "$ERR"

# --- --policy FILE in a cell ---
mkdir -p "$T_WORK/out"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$T_WORK/out"
sc run --policy "$P/bad_size.json" -v "$T_WORK/out:/out" -- touch /out/ran
check "run with an invalid policy exits 125" expect_rc 125
check "... and runs nothing" test ! -e "$T_WORK/out/ran"

put fields.json '{"hostname": "polcell", "env": {"FOO": "from-policy"}, "workdir": "/tmp"}'
sc run --policy "$P/fields.json" -- sh -c 'hostname; echo "$FOO"; pwd'
check "the policy's hostname, env and workdir apply" out_is "$(printf 'polcell\nfrom-policy\n/tmp')"
sc run --policy "$P/fields.json" --hostname fromcli -e FOO=cli -w / -- sh -c 'hostname; echo "$FOO"; pwd'
check "command-line options override the policy" out_is "$(printf 'fromcli\ncli\n/')"

# A policy without "seccomp" gets the default filter.
sc run --policy "$P/fields.json" -- sh -c 'unshare -U true 2>/dev/null; echo $?'
check "a policy without seccomp still denies unshare" out_is 1

# The policy's own filter is the one loaded: default with mkdir denied (EACCES).
python3 - "$P/default.json" "$P/nomkdir.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["seccomp"]
s["allow"] = [n for n in s["allow"] if n not in ("mkdir", "mkdirat")]
s["deny"].append({"names": ["mkdir", "mkdirat"], "errno": "EACCES"})
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
chmod 644 "$P/nomkdir.json"
sc policy check "$P/nomkdir.json"
check "an edited profile checks" expect_rc 0
sc run --policy "$P/nomkdir.json" -- sh -c 'mkdir /tmp/x 2>&1; echo "rc=$?"; touch /tmp/y && echo touched'
check "the edited filter is enforced (mkdir: EACCES)" out_has "Permission denied"
check "... and the rest still works" out_has "^touched"

# strict: AF_UNIX sockets only, read-only binds only. Without a cgroup
# memory controller strict's 512M becomes RLIMIT_AS, under which an ASan
# build of sandcell (the cell's init) cannot even start: say so and skip.
sc run --policy strict -- true
if [ "$RC" -ne 0 ] && err_has "AddressSanitizer"; then
	echo "# skip: this ASan build cannot run under strict's memory limit here (RLIMIT_AS)"
	# what ran must pass; the rest is a skip, not a pass
	finish || exit 1
	exit 77
fi
sc run --policy strict -- python3 -c '
import socket
socket.socket(socket.AF_UNIX).close()
try:
    socket.socket(socket.AF_INET)
    print("inet allowed")
except OSError as e:
    print("inet", e.errno)
'
check "strict allows AF_UNIX and refuses AF_INET with EAFNOSUPPORT" out_is "inet 97"
sc run --policy strict -v "$T_WORK/out:/out" -- true
check "strict refuses a writable bind" expect_rc 125
sc run --policy strict -v "$T_WORK/out:/out:ro" -- true
check "strict accepts a read-only bind" expect_rc 0

finish
