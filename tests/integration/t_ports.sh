#!/usr/bin/env bash
# Published ports (run/create -p): TCP from the host's loopback into the
# cell's own loopback, through a relay inside the cell; the cell gets no
# other network, and nothing is left on the host after rm.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

# An echo server for the cell's loopback: per connection, read to EOF,
# then answer "echo:" + what came (the client must half-close first).
SRV='
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
def serve(c):
    d = b""
    while True:
        x = c.recv(65536)
        if not x: break
        d += x
    c.sendall(b"echo:" + d); c.close()
n = int(sys.argv[2]) if len(sys.argv) > 2 else 0
while True:
    c, _ = s.accept(); t = threading.Thread(target=serve, args=(c,)); t.start()
    n -= 1
    if n == 0: t.join(); break
'
# CLIENT PORT N SIZE: N connections at once, each sending SIZE distinct
# bytes, half-closing and reading the answer; prints "ok N" when all match.
CLIENT='
import os, socket, sys, threading
port, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
good = []
def one(i):
    data = (b"%d:" % i) + os.urandom(size)
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(data); c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        x = c.recv(65536)
        if not x: break
        got += x
    if got == b"echo:" + data: good.append(i)
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
print("ok", len(good))
'
export SRV CLIENT
client() { python3 -c "$CLIENT" "$@" 2>&1; }
port_free() { python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null; }

# --- bad specs: 125 with the usage, nothing made ---
for bad in abc 8080 70000:80 8080:0 1.2.3:8080:80 '[::1]8080:80'; do
	sc run -p "$bad" -- true
	check "-p $bad is refused with the usage (125)" bash -c '[ '$RC' -eq 125 ] && grep -q "usage: -p" <<<"$0"' "$ERR"
done
sc run -p 0.0.0.0:0:80 -- true
check "a non-loopback host address needs --publish-any-address" bash -c '[ '$RC' -eq 125 ] && grep -q -- "--publish-any-address" <<<"$0"' "$ERR"
sc run --publish-any-address -- true
check "--publish-any-address without -p is refused" expect_rc 125
sc run --policy strict -p "$(free_port):80" -- true
check "a policy that allows no TCP socket (strict) is refused in one line" bash -c '[ '$RC' -eq 125 ] && grep -q "allows no TCP sockets" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"

# --- a long-lived cell with a free host port ---
c="pc$$"
sc create -p 0:8000 "$c"
check "create -p 0:8000 succeeds" bash -c '[ '$RC' -eq 0 ]'
sc port "$c"
HP=$(printf '%s' "$OUT" | sed -n 's#^8000/tcp -> 127\.0\.0\.1:\([0-9]*\)$#\1#p')
check "port NAME lists 8000/tcp -> 127.0.0.1:HOSTPORT with a picked port" bash -c '[ -n "$0" ] && [ "$0" -gt 0 ]' "$HP"
sc port --json "$c"
check "port --json gives the mapping" bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d == [{\"host_addr\": \"127.0.0.1\", \"host_port\": int(sys.argv[1]), \"cell_port\": 8000, \"protocol\": \"tcp\"}], d" '"$HP" "$OUT"
sc ps --json
check "ps --json shows the ports" bash -c 'printf "%s" "$0" | python3 -c "
import json, sys
d = [x for x in json.load(sys.stdin) if x[\"name\"] == \"'$c'\"][0]
assert d[\"ports\"][0][\"cell_port\"] == 8000 and d[\"ports\"][0][\"host_port\"] == int(sys.argv[1]), d" '"$HP" "$OUT"

as_user "$SC_BIN" exec "$c" -- python3 -c "$SRV" 8000 >/dev/null 2>&1 &
srv_pid=$!
served() { [ "$(client "$HP" 1 10)" = "ok 1" ]; }
WAIT_S=20 wait_until served
check "the host reaches the cell's loopback server through the port (half-close)" served
out=$(client "$HP" 32 200000)
check "32 connections at once, each echoing 200 kB of its own data" [ "$out" = "ok 32" ]

# the relay: a child of the cell's init, under the cell's walls
init_pid=$(as_user "$SC_BIN" ps --json | python3 -c 'import json,sys; print([x for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0]["pid"])' "$c")
relay=$(pgrep -P "$init_pid" -x sandcell-relay | head -1)
check "a relay process runs in the cell" [ -n "$relay" ]
check "the relay has no capabilities, no_new_privs and seccomp" bash -c '
grep -q "^CapEff:[[:space:]]*0*$" /proc/$0/status && grep -q "^NoNewPrivs:[[:space:]]*1" /proc/$0/status &&
grep -q "^Seccomp:[[:space:]]*2" /proc/$0/status' "$relay"
sc exec "$c" -- sh -c 'ls /proc/self/fd | tr "\n" " "'
check "a command in the cell holds no listener (only its stdio)" bash -c '[ "$0" = "0 1 2 3 " ]' "$OUT"

# the cell still has no way to the host's network
hp2=$(free_port)
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$hp2" &
host_srv=$!
sleep 0.3
sc exec "$c" -- python3 -c 'import socket,sys
for p in (int(sys.argv[1]), int(sys.argv[2])):
    try:
        socket.create_connection(("127.0.0.1", p), timeout=3); print("reached", p)
    except OSError as e: print("no", p)' "$hp2" "$HP"
check "the cell cannot reach a host loopback server nor the published host port" \
	bash -c '[ "$0" = "$(printf "no %s\nno %s" "$1" "$2")" ]' "$OUT" "$hp2" "$HP"
kill "$host_srv" 2>/dev/null

# --- a host port in use: one line, 125, nothing left ---
sc create -p "127.0.0.1:$HP:9000" "busy$$"
check "a host port in use is refused in one line (125)" bash -c '[ '$RC' -eq 125 ] && grep -q "already in use" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc ps --json
check "... and no cell was made" bash -c '! grep -q "busy'$$'" <<<"$0"' "$OUT"

if [ "$SANDCELL_TEST_AS" = nobody ] && [ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" -gt 80 ]; then
	sc run -p 80:80 -- true
	check "a privileged host port as a user is a clear 125" bash -c '[ '$RC' -eq 125 ] && grep -q "privileged" <<<"$0"' "$ERR"
fi

# --- rm: the port is free again, the relay gone ---
sc rm -f "$c"
wait "$srv_pid" 2>/dev/null
check "after rm the host port is free" port_free "$HP"
check "after rm no relay process is left" bash -c '! kill -0 "$0" 2>/dev/null' "$relay"

# --- one-shot run: a picked port said on stderr, for the run's lifetime ---
errf="$T_WORK/run.err"
as_user "$SC_BIN" run --timeout 30 -p 0:7000 -- python3 -c "$SRV" 7000 1 >/dev/null 2>"$errf" &
run_pid=$!
run_port() { sed -n 's#^7000/tcp -> 127\.0\.0\.1:\([0-9]*\)$#\1#p' "$errf"; }
WAIT_S=30 wait_until bash -c '[ -n "$(sed -n "s#^7000/tcp -> .*:##p" "$0")" ]' "$errf"
# PORT: one client exchange; the relay accepts at once and drops the
# connection while the command's server is not listening yet, so try again
# for 30 s at most. Prints the last answer.
client_when_up() {
	local out="" end=$((SECONDS + 30))
	while [ "$SECONDS" -lt "$end" ]; do
		out=$(client "$1" 1 1000)
		[ "$out" = "ok 1" ] && break
		sleep 0.2
	done
	printf '%s' "$out"
}
RP=$(run_port)
out=$(client_when_up "$RP")
check "run -p 0:7000 says the picked port and relays to the command's server" [ "$out" = "ok 1" ]
wait "$run_pid"
RC=$?
check "the run ends with its command's status" expect_rc 0
check "after the run the host port is free" port_free "$RP"

# --- Landlock's "connect": "proxy" lets the relay reach the published port ---
printf '{"description": "t_ports", "landlock": {"connect": "proxy"}}\n' >"$T_WORK/ll.json"
chmod 644 "$T_WORK/ll.json"
as_user "$SC_BIN" run --policy "$T_WORK/ll.json" --timeout 30 -p 0:7001 -- python3 -c "$SRV" 7001 1 >/dev/null 2>"$errf" &
run_pid=$!
WAIT_S=30 wait_until bash -c '[ -n "$(sed -n "s#^7001/tcp -> .*:##p" "$0")" ]' "$errf"
RP=$(sed -n 's#^7001/tcp -> 127\.0\.0\.1:\([0-9]*\)$#\1#p' "$errf")
out=$(client_when_up "$RP")
check "with Landlock connect=proxy the relay still reaches the published cell port" [ "$out" = "ok 1" ]
wait "$run_pid"

finish
