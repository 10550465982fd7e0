#!/usr/bin/env bash
# E2B's wire API in sandcell serve: a few requests by hand (the envd
# routes without a sandbox or token, the Connect envelope, E2B's error
# shape), slime's calls as the Python SDK sends them (e2b_slime_wire.py),
# then the official E2B JS SDK (e2b_client.mjs: create, commands, a
# background command that outlives its stream, commands.connect, PTYs,
# files, files.watchDir, list, connect, two sandboxes, setTimeout expiry,
# kill twice, a wrong key, an envd call without the access token,
# snapshots) and @e2b/code-interpreter (runCode: output as it comes,
# state, value, error, a plot; JavaScript, TypeScript, R, bash;
# contexts), and no cell left after SIGTERM. Snapshots and slime's image
# key run on a second server whose store holds a small image. The SDKs
# are installed with npm (cached in /var/tmp/sandcell-test-npm by
# version); no node or no npm registry: skipped (77).
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

E2B_VERSION=2.51.0
CI_VERSION=2.8.0 # @e2b/code-interpreter

gone_pid() { ! kill -0 "$1" 2>/dev/null; }

# a token of the shape E2B's keys have (docs/e2b.md)
TOKEN="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 600 "$T_WORK/token"
[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$T_WORK/token"
# --max-concurrency: a stream holds its slot, and the client opens 33
# at once (the per-sandbox limit of 32 Connect and WatchDir streams)
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 --domain sandcell.localhost --max-concurrency 48 \
	>"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
# A second server for what needs an image in the store (the first runs the
# host image, which is not stored): E2B snapshots, and an image named by
# slime's metadata key. Its image: busybox and the host's bash (the SDKs
# run every command with /bin/bash -l -c), a few MB, imported in well under
# a second. Without busybox those checks are skipped.
SERVER2=
IMG=e2bimg
if [ -x /bin/busybox ]; then
	IR="$T_DIR/img/rootfs"
	mkdir -p "$IR/bin" "$IR/etc" "$IR/tmp" && chmod 1777 "$IR/tmp"
	cp /bin/busybox "$IR/bin/"
	for t in sh cat ls id echo test mkdir touch wc head tail sleep env pwd chmod rm setsid; do
		ln -s busybox "$IR/bin/$t"
	done
	cp /bin/bash "$IR/bin/bash"
	for l in $(ldd /bin/bash | grep -o '/[^ ]*'); do
		mkdir -p "$IR$(dirname "$l")" && cp -L "$l" "$IR$l"
	done
	echo "$IMG image" >"$IR/etc/e2b-image"
	TOOL="$(dirname "$0")/image_tool.py"
	python3 "$TOOL" pack-rootfs "$IR" "$T_DIR/img/img.tar" 0 &&
		python3 "$TOOL" oci-from-tar "$T_DIR/img/img.tar" "$T_DIR/img/oci" PATH=/bin &&
		chmod -R a+rX "$T_DIR/img"
	sc image import "$T_DIR/img/oci" "$IMG"
	check "an image with bash is imported for the second server" expect_rc 0
	as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
		--port-file "$T_WORK/port2" --pool 1 --allow-images --ephemeral \
		>"$T_WORK/serve2.log" 2>"$T_WORK/serve2.err" &
	SERVER2=$!
else
	echo "# skip: snapshots and slime's image key (busybox-static is not installed)"
fi
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL="http://127.0.0.1:$(cat "$T_WORK/port")"

# --- by hand ---
# req METHOD PATH [curl args...]: sets OUT (body) and RC (HTTP status)
req() {
	local m=$1 p=$2
	shift 2
	OUT=$(curl -s -o - -w '\n%{http_code}' -X "$m" "$URL$p" "$@")
	RC=${OUT##*$'\n'}
	OUT=${OUT%$'\n'*}
	export OUT RC
}
req GET /v2/sandboxes
check "the control plane wants the key" expect_rc 401
req GET /v2/sandboxes -H "X-API-KEY: $TOKEN"
check "X-API-KEY is the server's token" bash -c '[ "$RC" = 200 ] && [ "$(jget "len(d)")" = 0 ]'
req DELETE /sandboxes/vm-0123456789abcdef -H "X-API-KEY: $TOKEN"
check "DELETE of an unknown sandbox: 404 in E2B's shape" \
	bash -c '[ "$RC" = 404 ] && [ "$(jget "d[\"code\"]")" = 404 ]'
req POST /v2/sandboxes -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' \
	-d '{"templateID":"no-such-image"}'
check "an unknown template is refused (400)" bash -c '[ "$RC" = 400 ]'
req POST /v2/sandboxes -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' \
	-d '{"templateID":"base","timeout":60,"metadata":{"by":"hand"}}'
check "create: 201 with an id and an access token" \
	bash -c '[ "$RC" = 201 ] && [ -n "$(jget "d[\"envdAccessToken\"]")" ]'
SID=$(jget 'd["sandboxID"]')
ATOK=$(jget 'd["envdAccessToken"]')
req GET /health
check "envd's /health answers without a token" expect_rc 204
req POST /process.Process/List -H 'Content-Type: application/json' -d '{}' \
	-H "E2b-Sandbox-Id: $SID"
check "an envd call without the access token: 401, Connect's unauthenticated" \
	bash -c '[ "$RC" = 401 ] && [ "$(jget "d[\"code\"]")" = unauthenticated ]'
req POST /process.Process/List -H 'Content-Type: application/json' -d '{}' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $TOKEN"
check "... and with the server's token instead of the sandbox's: 401" expect_rc 401
req POST /process.Process/List -H 'Content-Type: application/json' -d '{}' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK"
check "... and with it: the (empty) list" bash -c '[ "$RC" = 200 ] && [ "$(jget "d[\"processes\"]")" = "[]" ]'
# a Start whose envelope says more bytes than come
printf '\0\0\0\1\0{}' >"$T_WORK/bad.env"
req POST /process.Process/Start -H 'Content-Type: application/connect+json' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/bad.env"
check "a Start with a bad envelope: invalid_argument" \
	bash -c '[ "$RC" = 400 ] && [ "$(jget "d[\"code\"]")" = invalid_argument ]'
python3 -c 'import json,struct,sys
m=json.dumps({"process":{"cmd":"/bin/sh","args":["-c","echo hi; exit 3"]}}).encode()
sys.stdout.buffer.write(b"\0"+struct.pack(">I",len(m))+m)' >"$T_WORK/start.env"
curl -s -X POST "$URL/process.Process/Start" -H 'Content-Type: application/connect+json' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/start.env" \
	-o "$T_WORK/start.out"
frames_ok() {
	python3 -c 'import base64,json,struct,sys
b=open(sys.argv[1],"rb").read(); f=[]
while b:
    fl,n=b[0],struct.unpack(">I",b[1:5])[0]; f.append((fl,json.loads(b[5:5+n]))); b=b[5+n:]
ev=[x[1]["event"] for x in f[:-1]]
ok=("start" in ev[0] and base64.b64decode(ev[1]["data"]["stdout"])==b"hi\n"
    and ev[-1]["end"]["exitCode"]==3 and f[-1]==(2,{}) and all(x[0]==0 for x in f[:-1]))
if not ok: print(f, file=sys.stderr)
sys.exit(0 if ok else 1)' "$T_WORK/start.out"
}
check "Start streams start, data, end envelopes and the end-stream frame" frames_ok
printf -- '--b1\r\nContent-Disposition: form-data; name="file"; filename="../../etc/x"\r\n\r\nhi\r\n--b1--\r\n' \
	>"$T_WORK/up.mp"
req POST /files -H 'Content-Type: multipart/form-data; boundary=b1' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/up.mp"
check "a multipart part named ../../etc/x is refused (400)" expect_rc 400
req POST '/files?path=%2Fhome%2Fuser%2Fx.txt' -H 'Content-Type: multipart/form-data; boundary=b1' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary 'no parts here'
check "a multipart body without parts is refused (400)" expect_rc 400
# gzip bodies: bounded when inflated, whole or refused, and answers gzipped
# only for a client that takes gzip
printf 'gzipped text\n' | gzip >"$T_WORK/small.gz"
req POST '/files?path=gz.txt' -H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/small.gz"
check "POST /files with Content-Encoding: gzip is written inflated" bash -c '[ "$3" = 200 ] &&
	[ "$(curl -s "$0/files?path=gz.txt" -H "E2b-Sandbox-Id: $1" -H "X-Access-Token: $2")" = "gzipped text" ]' \
	"$URL" "$SID" "$ATOK" "$RC"
head -c 17M /dev/zero | gzip >"$T_WORK/bomb.gz"
req POST '/files?path=bomb' -H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/bomb.gz"
check "a gzip body of $(stat -c %s "$T_WORK/bomb.gz") bytes that inflates past 16 MiB: 413" expect_rc 413
head -c 20 "$T_WORK/small.gz" >"$T_WORK/cut.gz"
req POST '/files?path=cut' -H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary @"$T_WORK/cut.gz"
check "a cut gzip body: 400" expect_rc 400
req POST '/files?path=br' -H 'Content-Type: application/octet-stream' -H 'Content-Encoding: br' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" --data-binary 'x'
check "another Content-Encoding: 415" expect_rc 415
gz_answer() { # ACCEPT-ENCODING: the answer's Content-Encoding header, if any
	curl -s -D - -o /dev/null "$URL/files?path=gz.txt" -H "Accept-Encoding: $1" \
		-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" | tr -d '\r' |
		sed -n 's/^[Cc]ontent-[Ee]ncoding: *//p'
}
GZ_YES=$(gz_answer "deflate, gzip") GZ_Q0=$(gz_answer "gzip;q=0") GZ_ID=$(gz_answer identity)
GZ_BODY=$(curl -s --compressed "$URL/files?path=gz.txt" -H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK")
check "GET /files for Accept-Encoding: gzip answers gzipped, and the bytes inflate right" \
	bash -c '[ "$0" = gzip ] && [ "$1" = "gzipped text" ]' "$GZ_YES" "$GZ_BODY"
check "... and not for gzip;q=0 or identity" bash -c '[ -z "$0$1" ]' "$GZ_Q0" "$GZ_ID"
req GET '/files?path=..%2F..%2Fetc%2Fpasswd' -H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK"
check "GET /files of a path with '..' is refused (400)" expect_rc 400
req GET "/sandboxes/$SID/metrics" -H "X-API-KEY: $TOKEN"
check "GET /sandboxes/ID/metrics: one sample" \
	bash -c '[ "$RC" = 200 ] && [ "$(jget "len(d)")" = 1 ] && [ "$(jget "d[0][\"memUsed\"] > 0")" = true ]'
req GET "/sandboxes/$SID/metrics?start=x" -H "X-API-KEY: $TOKEN"
check "... ?start= that is not a number: 400" expect_rc 400
req GET "/sandboxes/$SID/metrics"
check "... without the API key: 401" expect_rc 401
req GET "/sandboxes/nosuch/metrics" -H "X-API-KEY: $TOKEN"
check "... of an unknown sandbox: 404" expect_rc 404
# pause: the timeout stops meanwhile; /resume is the older SDKs' way back
req POST "/sandboxes/$SID/resume" -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' -d '{}'
check "POST /sandboxes/ID/resume of a running sandbox: 409" expect_rc 409
req POST "/sandboxes/$SID/timeout" -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' -d '{"timeout":2}'
req POST "/sandboxes/$SID/pause" -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' -d '{"memory":true}'
check "POST /sandboxes/ID/pause: 204" expect_rc 204
sleep 4
req GET "/sandboxes/$SID" -H "X-API-KEY: $TOKEN"
check "a paused sandbox outlives its timeout (2 s, 4 s ago), as on E2B" \
	bash -c '[ "$RC" = 200 ] && [ "$(jget "d[\"state\"]")" = paused ]'
req POST "/sandboxes/$SID/resume" -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' -d '{"timeout":600}'
check "POST /sandboxes/ID/resume of it: 201, running" \
	bash -c '[ "$RC" = 201 ] && [ "$(jget "d[\"state\"]")" = running ]'
req POST "/sandboxes/vm-0123456789abcdef/pause" -H "X-API-KEY: $TOKEN" -d '{}'
check "pause of an unknown sandbox: 404" expect_rc 404
req POST /execute -H 'Content-Type: application/json' -H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK" \
	-d '{"code":"DISPLAY 1","language":"cobol"}'
check "runCode in a language not served: 400 that names the ones served" \
	bash -c '[ "$RC" = 400 ] && grep -q "not served: python .*javascript, typescript, r and bash" <<<"$OUT"'
req POST /v2/sandboxes -H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' \
	-d '{"templateID":"base","metadata":{"sandcell/image":"e2bimg"}}'
check "an image named by the metadata key (sandcell/image) without --allow-images: 400" \
	bash -c '[ "$RC" = 400 ]'
req DELETE "/sandboxes/$SID" -H "X-API-KEY: $TOKEN"
check "DELETE: 204" expect_rc 204
req POST /process.Process/List -H 'Content-Type: application/json' -d '{}' \
	-H "E2b-Sandbox-Id: $SID" -H "X-Access-Token: $ATOK"
check "an envd call to a killed sandbox: unavailable (the SDK's sandbox-gone error)" \
	bash -c '[ "$RC" = 503 ] && [ "$(jget "d[\"code\"]")" = unavailable ]'

# --- slime's calls as the Python SDK sends them, on the second server ---
URL2=
if [ -n "$SERVER2" ] && wait_until test -s "$T_WORK/port2"; then
	URL2="http://127.0.0.1:$(cat "$T_WORK/port2")"
	ST=$(curl -s -o "$T_WORK/conflict" -w '%{http_code}' -X POST "$URL2/v2/sandboxes" \
		-H "X-API-KEY: $TOKEN" -H 'Content-Type: application/json' \
		-d '{"templateID":"other","metadata":{"sandcell/image":"e2bimg"}}')
	check "a templateID and the metadata key naming two images: 400" \
		bash -c '[ "$0" = 400 ] && grep -q "name two images" "$1"' "$ST" "$T_WORK/conflict"
	for py in python3 /usr/bin/python3; do
		WIRE=$(timeout 300 "$py" "$(dirname "$0")/e2b_slime_wire.py" "$URL2" "$TOKEN" sandcell/image "$IMG" "$IMG image" 2>&1)
		WRC=$?
		while IFS= read -r line; do
			case "$line" in
			"ok   - "*) pass "slime wire ($py): ${line#ok   - }" ;;
			"FAIL - "*) fail "slime wire ($py): ${line#FAIL - }" ;;
			*) echo "# $line" ;;
			esac
		done <<<"$WIRE"
		check "slime's wire ($py) ran to the end" bash -c '[ "$0" -eq 0 ] && grep -qx done <<<"$1"' "$WRC" "$WIRE"
	done
elif [ -n "$SERVER2" ]; then
	fail "the second server writes its port"
fi

# --- the official SDK ---
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "skip: node and npm are needed for the E2B SDK client"
	kill "$SERVER" $SERVER2
	exit 77
fi
CACHE=/var/tmp/sandcell-test-npm/e2b-$E2B_VERSION-ci-$CI_VERSION
if [ ! -f "$CACHE/node_modules/@e2b/code-interpreter/package.json" ]; then
	mkdir -p /var/tmp/sandcell-test-npm
	(
		flock 9
		if [ ! -f "$CACHE/node_modules/@e2b/code-interpreter/package.json" ]; then
			scratch=$(mktemp -d "$T_DIR/npm.XXXXXX")
			(cd "$scratch" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
				"e2b@$E2B_VERSION" "@e2b/code-interpreter@$CI_VERSION" >"$scratch/log" 2>&1) &&
				rm -rf "$CACHE.tmp" && mkdir -p "$CACHE.tmp" && mv "$scratch/node_modules" "$CACHE.tmp/" &&
				mv "$CACHE.tmp" "$CACHE" || cat "$scratch/log" >&2
		fi
	) 9>/var/tmp/sandcell-test-npm/lock
fi
if [ ! -f "$CACHE/node_modules/@e2b/code-interpreter/package.json" ]; then
	echo "skip: npm could not install e2b@$E2B_VERSION and @e2b/code-interpreter@$CI_VERSION"
	kill "$SERVER" $SERVER2
	exit 77
fi
NODE_DIR="$T_DIR/node"
mkdir -p "$NODE_DIR"
ln -s "$CACHE/node_modules" "$NODE_DIR/node_modules"
cp "$(dirname "$0")/e2b_client.mjs" "$NODE_DIR/"
CLIENT_OUT=$(cd "$NODE_DIR" && E2B_API_URL="$URL" E2B_SANDBOX_URL="$URL" E2B_API_KEY="$TOKEN" \
	SC_DOMAIN=sandcell.localhost SC_IMG_URL="$URL2" SC_IMG="$IMG" \
	timeout 800 node e2b_client.mjs 2>&1)
CRC=$?
printf '%s\n' "$CLIENT_OUT" | grep -v -e '^ok ' -e '^FAIL ' | sed 's/^/# /'
while IFS= read -r line; do
	case "$line" in
	"ok   - "*) pass "${line#ok   - }" ;;
	"FAIL - "*) fail "${line#FAIL - }" ;;
	esac
done <<<"$CLIENT_OUT"
check "the SDK client ran to the end" bash -c '[ "$0" -eq 0 ] && grep -qx done <<<"$1"' "$CRC" "$CLIENT_OUT"

# the sandbox the client left is removed when the server stops
kill -TERM "$SERVER"
check "SIGTERM ends the server" wait_until gone_pid "$SERVER"
if [ -n "$SERVER2" ]; then
	kill -TERM "$SERVER2"
	check "SIGTERM ends the second server" wait_until gone_pid "$SERVER2"
fi
check "no cell is left after the server stopped" wait_until no_cells
sed 's/^/# server: /' "$T_WORK/serve.err" | tail -20
finish
