#!/usr/bin/env bash
# Many servers, one URL: three `sandcell serve` on 127.0.0.1 (each its own
# SANDCELL_ROOT and --node-name) behind Debian's nginx running the shipped
# docs/nginx-sandcell.conf (its ports and paths put in), started by the
# test as the test user on a free port. New cells and /run_code spread
# over the three; every request for a cell (path, E2b-Sandbox-Id header)
# reaches its owner; one server stopped: its cells answer 502 naming it,
# the others' go on; nothing is left after (nginx_check.py does the HTTP).
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

NGINX=$(command -v nginx || true)
if [ -z "$NGINX" ]; then
	echo "SKIP: no nginx (apt-get install nginx: scripts/setup.sh)"
	exit 77
fi
CLIENT="$T_DIR/nginx_check.py"
cp "$(dirname "$0")/nginx_check.py" "$CLIENT"
chmod 644 "$CLIENT"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"

sc serve --help
check "serve --help lists --node-name and its rule" out_has "--node-name NAME"
sc serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" --node-name Not_A_Node
check "a bad --node-name is refused (125)" expect_rc 125
check "... in one line saying the rule" err_has "a-z, 0-9 and '-'"

# --- three servers (node names as in the shipped file) ---
NODES=(sandcell-0 sandcell-1 sandcell-2)
declare -A PID URLS
NGX_PID=
stop_all() {
	[ -n "$NGX_PID" ] && kill -TERM "$NGX_PID" 2>/dev/null && wait "$NGX_PID" 2>/dev/null
	for n in "${NODES[@]}"; do
		[ -n "${PID[$n]:-}" ] && kill -TERM "${PID[$n]}" 2>/dev/null && wait "${PID[$n]}" 2>/dev/null
	done
	t_cleanup
}
trap stop_all EXIT
for n in "${NODES[@]}"; do
	SANDCELL_ROOT="$T_WORK/root-$n" as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 \
		--token-file "$T_WORK/token" --port-file "$T_WORK/port-$n" --node-name "$n" --pool 2 \
		>"$T_WORK/serve-$n.log" 2>"$T_WORK/serve-$n.err" &
	PID[$n]=$!
done
for n in "${NODES[@]}"; do
	check "server $n writes its port" wait_until test -s "$T_WORK/port-$n"
	URLS[$n]=http://127.0.0.1:$(cat "$T_WORK/port-$n")
done

# --- nginx: the shipped file with this test's ports, in a prefix the test
# user owns (pid, logs, temp files), in the foreground ---
D="$T_WORK/nginx"
mkdir -p "$D"
NPORT=$(free_port)
sed -e "s/127\.0\.0\.1:8080;/127.0.0.1:$NPORT;/" \
	-e "s/127\.0\.0\.1:8081/127.0.0.1:${URLS[sandcell-0]##*:}/" \
	-e "s/127\.0\.0\.1:8082/127.0.0.1:${URLS[sandcell-1]##*:}/" \
	-e "s/127\.0\.0\.1:8083/127.0.0.1:${URLS[sandcell-2]##*:}/" \
	"$SRCDIR/docs/nginx-sandcell.conf" >"$D/sandcell.conf"
user_line=
[ "$SANDCELL_TEST_AS" = root ] && user_line="user nobody nogroup;" # the workers; the master makes the temp dirs theirs
cat >"$D/nginx.conf" <<CONF
$user_line
worker_processes 2;
pid $D/nginx.pid;
error_log $D/error.log warn;
events { worker_connections 1024; }
http {
	access_log $D/access.log;
	client_body_temp_path $D/tmp-body;
	proxy_temp_path $D/tmp-proxy;
	fastcgi_temp_path $D/tmp-fastcgi;
	uwsgi_temp_path $D/tmp-uwsgi;
	scgi_temp_path $D/tmp-scgi;
	include $D/sandcell.conf;
}
CONF
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$D"
as_user "$NGINX" -t -q -p "$D" -c "$D/nginx.conf" -e "$D/error.log" >"$D/t.out" 2>&1
RC=$? OUT=$(cat "$D/t.out") ERR=
check "nginx -t accepts the shipped configuration" expect_rc 0
as_user_exec "$NGINX" -p "$D" -c "$D/nginx.conf" -e "$D/error.log" -g 'daemon off;' \
	>"$D/stdout" 2>&1 &
NGX_PID=$!
NGX=http://127.0.0.1:$NPORT
ngx_up() { python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
	"$NGX/v1/ping" >/dev/null 2>&1; }
WAIT_S=30 check "nginx answers /v1/ping" wait_until ngx_up || cat "$D/error.log" "$D/stdout"

nodes_arg() { for n in "$@"; do printf '%s=%s ' "$n" "${URLS[$n]}"; done; }
# shellcheck disable=SC2046
check "spread and routed by the id's node" \
	python3 "$CLIENT" spread "$NGX" "$TOKEN" "$T_DIR/cells.json" $(nodes_arg "${NODES[@]}")

# --- one server stopped (SIGTERM: it removes its cells) ---
kill -TERM "${PID[sandcell-2]}"
wait "${PID[sandcell-2]}"
RC=$?
check "server sandcell-2 stops (0)" expect_rc 0
PID[sandcell-2]=
# shellcheck disable=SC2046
check "its cells answer 502, the others go on" \
	python3 "$CLIENT" down "$NGX" "$TOKEN" "$T_DIR/cells.json" sandcell-2 $(nodes_arg "${NODES[@]}")

# --- nothing left ---
kill -TERM "$NGX_PID"
wait "$NGX_PID"
RC=$?
check "nginx stops (0)" expect_rc 0
NGX_PID=
for n in sandcell-0 sandcell-1; do
	kill -TERM "${PID[$n]}"
	wait "${PID[$n]}"
	RC=$?
	check "server $n stops (0)" expect_rc 0
	PID[$n]=
done
for n in "${NODES[@]}"; do
	SANDCELL_ROOT="$T_WORK/root-$n" check "no cell left under $n's root" no_cells
done
check "no nginx process of the test's left" no_process_with "$D/nginx.conf"
# (its [error] lines are the stopped server's refused connections)
check "nginx logged nothing critical" bash -c '! grep -E "\[(crit|alert|emerg)\]" "$0"' "$D/error.log" ||
	grep -E "\[(crit|alert|emerg)\]" "$D/error.log" | head -5
finish
