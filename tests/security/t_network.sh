#!/usr/bin/env bash
# Security suite: sockets and the host's network services, under the
# `default` policy (network mode none: the cell has only its own lo).
#
# Cases (attacks/net.c):
#   alg        AF_ALG socket (also with high bits in the family), socketpair
#   vsock      AF_VSOCK stream and datagram sockets, connect to the hypervisor
#   packet     AF_PACKET raw and datagram (also high bits), AF_INET SOCK_PACKET
#   raw        SOCK_RAW for ICMP, IPPROTO_RAW, TCP, ICMPv6 (also high bits)
#   tcp        connect to a TCP server the test runs on the host's
#              127.0.0.1:PORT (also 127.0.0.2, 0.0.0.0, [::1])
#              host: the server logged no connection; a control connection
#              from the host is logged (so the check can fail)
#   abstract   connect to the host server's abstract unix socket
#              host: no connection logged
#   iface      /dev/net/tun, interfaces besides lo, taking lo down
. "$(dirname "$0")/../lib.sh"

build_attacks net

for c in alg vsock packet raw; do
	run_attack -- /attacks/net "$c"
	check "$c: every socket is refused" attack_blocked
done

# --- a host service on loopback ---
cp "$(dirname "$0")/listen_log.py" "$T_DIR/listen_log.py"
ready="$T_DIR/server.port"
log="$T_DIR/server.log"
abstract="sandcell-test-$$-$RANDOM"
: >"$log"
python3 "$T_DIR/listen_log.py" "$ready" "$log" "$abstract" </dev/null >/dev/null 2>&1 &
server=$!
stop_server() { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
trap 'stop_server; t_cleanup' EXIT
for _ in $(seq 600); do [ -s "$ready" ] && break; sleep 0.1; done
port=$(cat "$ready" 2>/dev/null)
check "the host's TCP server is listening" bash -c '[[ "$0" =~ ^[0-9]+$ ]]' "$port"
# A connection from the host, then until the server has logged it: the
# server accepts in one loop, so whatever connected before is logged by
# then too. The log must then hold only these controls.
CONTROLS=0
host_connects() {
	CONTROLS=$((CONTROLS + 1))
	python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$port"
	for _ in $(seq 600); do [ "$(grep -c . "$log")" -ge "$CONTROLS" ] && break; sleep 0.1; done
}
only_controls_logged() { [ "$(grep -c . "$log")" -eq "$CONTROLS" ] && ! grep -qv "from ('127.0.0.1'" "$log"; }

run_attack -- /attacks/net tcp "$port"
check "tcp: connecting to the host's 127.0.0.1:$port fails" attack_blocked
check "tcp: connection refused (the cell's 127.0.0.1 is its own)" out_has "127.0.0.1:$port: ECONNREFUSED"
host_connects
check "control: a connection from the host is logged" bash -c '[ "$(grep -c . "$0")" -ge 1 ]' "$log"
check "tcp: the host's server saw no connection from the cell" only_controls_logged

run_attack -- /attacks/net abstract "$abstract"
check "abstract: connecting to the host's abstract unix socket fails" attack_blocked
host_connects
check "abstract: the host's server saw no connection from the cell" only_controls_logged
stop_server

run_attack -- /attacks/net iface
check "iface: no way to another network" attack_blocked

finish
