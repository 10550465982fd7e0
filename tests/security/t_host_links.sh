#!/usr/bin/env bash
# A cell plants symlinks through magic links — /proc/self/fd/N/.. for every
# N from 3 to 20, /proc/1/root, /proc/self/cwd, /proc/self/root — and every
# path by which sandcell's own code touches a cell's files is driven through
# them: cp both ways, exec's working directory (asked for, and the cell's
# own workdir replaced by such a link), commit, the API's file and tar
# routes and exec, MCP's file tools; in persistent and plain cells of a
# stored image and of the host image. Nothing of the host may be read or
# written. (Issue #29: init held an fd of a persistent cell's layer on the
# host, and its workers resolved paths through it.)
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: /bin/busybox (busybox-static) is needed for the test image"; exit 77; }

# The host side: a secret the test user can read, and a directory anyone
# may write into, which must stay empty.
HOST="$T_DIR/hostside"
mkdir -p "$HOST/w"
SECRET="host-secret-$$-$RANDOM"
printf '%s\n' "$SECRET" >"$HOST/secret"
chmod 755 "$HOST"
chmod 644 "$HOST/secret"
chmod 777 "$HOST/w"
printf 'written\n' >"$T_DIR/evil"
chmod 644 "$T_DIR/evil"
OUTD="$T_WORK/out"
as_user mkdir -p "$OUTD"

A="$T_DIR/archives"
mkdir -p "$A"
python3 "$SRCDIR/tests/integration/image_tool.py" docker "$A/base.tar"
chmod -R a+rX "$A"
sc image import "$A/base.tar" base
check "the test image imports" expect_rc 0

# the probe's Python (run as the test user: copied where it can read it,
# keeping its layout, as the checkout may be root's alone)
PROBE="$T_DIR/py/security/host_links.py"
mkdir -p "$T_DIR/py/security" "$T_DIR/py/integration"
cp "$SRCDIR/tests/security/host_links.py" "$PROBE"
cp "$SRCDIR/tests/integration/serve_client.py" "$T_DIR/py/integration/"
chmod -R a+rX "$T_DIR/py"

LINKS="p1root cwd selfroot"
for n in $(seq 3 20); do LINKS="$LINKS fd$n"; done
UP=$(printf '/..%.0s' $(seq 24))
PLANT='mkdir -p /testbed && cd /testbed &&'
for n in $(seq 3 20); do PLANT="$PLANT ln -sfn /proc/self/fd/$n$UP fd$n &&"; done
PLANT="$PLANT ln -sfn /proc/1/root p1root && ln -sfn /proc/self/cwd$UP cwd && ln -sfn /proc/self/root selfroot"

host_untouched() { [ -z "$(ls -A "$HOST/w")" ] && [ "$(cat "$HOST/secret")" = "$SECRET" ]; }
no_secret() { ! printf '%s' "$OUT" | grep -q "$SECRET"; }
no_secret_in() { ! grep -rqs "$SECRET" "$1"; }

probe_cell() { # probe_cell NAME: drive the CLI's paths through every link
	local c=$1 l bad_read=0 bad_write=0 bad_cwd=0
	for l in $LINKS; do
		rm -rf "$OUTD/got"
		sc cp "$c:/testbed/$l$HOST/secret" "$OUTD/got"
		no_secret_in "$OUTD/got" || { bad_read=1; echo "# read through $l"; }
		rm -rf "$OUTD/got"
		sc cp "$c:/testbed/$l$HOST" "$OUTD/got"
		no_secret_in "$OUTD/got" || { bad_read=1; echo "# directory read through $l"; }
		sc cp "$T_DIR/evil" "$c:/testbed/$l$HOST/w/cp-file"
		sc cp "$T_DIR/evil" "$c:/testbed/$l$HOST/w/"
		host_untouched || { bad_write=1; echo "# write through $l"; }
		sc exec -w "/testbed/$l" "$c" -- cat ".$HOST/secret"
		no_secret || { bad_cwd=1; echo "# exec -w $l"; }
		sc exec -w "/testbed/$l$HOST" "$c" -- sh -c 'cat secret; echo x >w/exec-file'
		no_secret && host_untouched || { bad_cwd=1; echo "# exec -w $l$HOST"; }
	done
	RC=$bad_read; check "$2: cp out of the cell through a magic link reads nothing of the host" expect_rc 0
	RC=$bad_write; check "$2: cp into the cell through a magic link writes nothing on the host" expect_rc 0
	RC=$bad_cwd; check "$2: exec -w through a magic link does not start on the host" expect_rc 0
	# the cell replaces its own working directory by such a link
	sc exec "$c" -- sh -c "rm -rf /testbed && ln -s /proc/self/fd/8$UP /testbed"
	sc exec "$c" -- sh -c "cat .$HOST/secret; echo x >.$HOST/w/workdir-file"
	check "$2: a workdir the cell replaced by a magic link does not start commands on the host" \
		bash -c "! printf '%s' \"\$0\" | grep -q '$SECRET'" "$OUT"
	check "$2: ... and they write nothing there" host_untouched
}

for image in base host; do
	for persist in "" --persist; do
		c="links$$${image}${persist:+p}"
		what="--image $image${persist:+ $persist}"
		sc create --image "$image" $persist "$c"
		check "$what: the cell is made" expect_rc 0
		sc exec "$c" -- sh -c "$PLANT"
		check "$what: the cell plants its links" expect_rc 0
		probe_cell "$c" "$what"
		if [ "$image" = base ]; then
			sc commit "$c" "derived$$${persist:+p}"
			check "$what: commit of the cell works" expect_rc 0
			sc run --image "derived$$${persist:+p}" -- sh -c "cat /testbed$HOST/secret 2>/dev/null; ls -a /testbed/ 2>/dev/null"
			check "$what: the committed image holds nothing of the host" no_secret
		fi
		check "$what: the host is untouched" host_untouched
		sc rm -f "$c"
	done
done

# an image whose own tree plants the links: a cell's setup (its workdir,
# --mkdir-like dirs, seed files) resolves nothing through them
sc run --image base -w /testbed -- sh -c "$PLANT"
check "a plain run's setup and command see only the cell" host_untouched

# a host directory handed over as stdio would be a way out (/proc/self/fd/0/..)
RC=0; OUT=$(as_user "$SC_BIN" run --image base -- sh -c "cat /proc/self/fd/0$UP$HOST/secret" <"$HOST" 2>&1) || RC=$?
check "run refuses a directory as stdin" bash -c '[ "$0" = 125 ] && printf "%s" "$1" | grep -q "stdin is a directory"' "$RC" "$OUT"
c="stdio$$"
sc create --image base "$c"
RC=0; OUT=$(as_user "$SC_BIN" exec -i "$c" -- sh -c "cat /proc/self/fd/0$UP$HOST/secret" <"$HOST" 2>&1) || RC=$?
check "exec -i refuses a directory as stdin" bash -c '[ "$0" = 125 ] && ! printf "%s" "$1" | grep -q "$2"' "$RC" "$OUT" "$SECRET"
sc rm -f "$c"

# --- the HTTP API: file and tar routes, exec's cwd ---
printf 'tok%s\n' "$RANDOM$RANDOM$RANDOM" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
TOKEN=$(head -n1 "$T_WORK/token")
for image in base host; do
	rm -f "$T_WORK/port"
	as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" --image "$image" \
		--port-file "$T_WORK/port" --pool 1 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
	SERVER=$!
	for _ in $(seq 300); do [ -s "$T_WORK/port" ] && break; sleep 0.1; done
	OUT=$(python3 "$PROBE" api "http://127.0.0.1:$(cat "$T_WORK/port")" \
		"$TOKEN" "$HOST" "$SECRET" 2>&1)
	RC=$?
	printf '%s\n' "$OUT" | grep FAIL | head -n 20
	check "API (--image $image): no file, tar or exec path reaches the host ($(printf '%s\n' "$OUT" | grep -c '^ok') checks)" expect_rc 0
	kill -TERM "$SERVER"
	wait "$SERVER"
done
check "after the API: the host is untouched" host_untouched

# --- MCP: read_file, write_file ---
OUT=$(as_user python3 "$PROBE" mcp "$SC_BIN" "$HOST" "$SECRET" 2>&1)
RC=$?
printf '%s\n' "$OUT" | grep FAIL | head -n 20
check "MCP: no file tool reaches the host ($(printf '%s\n' "$OUT" | grep -c '^ok') checks)" expect_rc 0
check "after MCP: the host is untouched" host_untouched

sc ps --json
check "no cell is left" bash -c '[ "$(printf "%s" "$0" | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" = 0 ]' "$OUT"
finish
