#!/usr/bin/env bash
# What the balancer costs (docs/scale-out.md): POST /run_code print(1) at
# concurrency 64, in one run, alternating burst by burst between
#   direct    one `sandcell serve` (sandcell-0) asked directly,
#   nginx-1   nginx (docs/nginx-sandcell.conf) in front of that one server,
#   nginx-3   the same nginx spreading over three servers (sandcell-0..2),
# each burst REQUESTS requests from 64 threads (python3, standard library,
# one kept connection per thread and target), after 300 GET /v1/ping one
# at a time to each (the hop without a cell). Prints requests/s, p50 and
# p99 per target, the pings' p50 and the ratios against direct. nginx-1
# against direct is the hop's own cost; nginx-3 against direct is what a
# user of three servers on this host gets (on a host with few cores the three share
# them: more servers add pool workers and processes, not cores).
# usage: scripts/bench_nginx.sh [ROUNDS] [REQUESTS] [CONCURRENCY]   (default 6 256 64)
# Needs nginx (apt-get install nginx) and build/sandcell (or SANDCELL=path).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
requests=${2:-256}
conc=${3:-64}
sc=${SANDCELL:-$PWD/build/sandcell}
[ -x "$sc" ] || { echo "no $sc: build first (scripts/setup.sh), or set SANDCELL"; exit 1; }
command -v nginx >/dev/null || { echo "no nginx: apt-get install nginx"; exit 1; }
work=$(mktemp -d /tmp/sandcell-bench-nginx.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$work/token"
port() { python3 -S -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# every server alike: enough slots and connections for 64 clients and
# nginx's kept connections
for i in 0 1 2; do
	SANDCELL_ROOT="$work/root$i" "$sc" serve --listen 127.0.0.1:0 --token-file "$work/token" \
		--port-file "$work/port$i" --node-name "sandcell-$i" --max-concurrency 128 \
		--max-connections 1024 --max-connections-per-peer 1024 --connection-timeout 600 >/dev/null 2>"$work/err$i" &
	pids+=($!)
done
for i in 0 1 2; do
	for _ in $(seq 600); do [ -s "$work/port$i" ] && break; sleep 0.1; done
	[ -s "$work/port$i" ] || { echo "server $i did not start"; cat "$work/err$i"; exit 1; }
done
p0=$(cat "$work/port0") p1=$(cat "$work/port1") p2=$(cat "$work/port2")
n3=$(port) n1=$(port)

# the shipped file with these ports, and a second listener whose every
# request goes to sandcell-0 alone
mkdir -p "$work/nginx"
sed -e "s/127\.0\.0\.1:8080;/127.0.0.1:$n3;/" -e "s/127\.0\.0\.1:8081/127.0.0.1:$p0/" \
	-e "s/127\.0\.0\.1:8082/127.0.0.1:$p1/" -e "s/127\.0\.0\.1:8083/127.0.0.1:$p2/" \
	docs/nginx-sandcell.conf >"$work/nginx/sandcell.conf"
cat >"$work/nginx/nginx.conf" <<CONF
$([ "$(id -u)" = 0 ] && echo "user nobody nogroup;")
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $work/nginx/tmp-body;
	proxy_temp_path $work/nginx/tmp-proxy;
	fastcgi_temp_path $work/nginx/tmp-fastcgi;
	uwsgi_temp_path $work/nginx/tmp-uwsgi;
	scgi_temp_path $work/nginx/tmp-scgi;
	include $work/nginx/sandcell.conf;
	server {
		listen 127.0.0.1:$n1;
		proxy_http_version 1.1;
		proxy_set_header Connection "";
		proxy_buffering off;
		proxy_request_buffering off;
		location / { proxy_pass http://sandcell_node_sandcell-0; }
	}
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 300); do
	python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
		"http://127.0.0.1:$n3/v1/ping" >/dev/null 2>&1 && break
	sleep 0.1
done

cat >"$work/load.py" <<'PY'
import http.client, json, sys, threading, time

targets = [t.split("=") for t in sys.argv[1].split(",")]
token = open(sys.argv[2]).read().strip()
rounds, requests, conc = map(int, sys.argv[3:6])
body = json.dumps({"code": "print(1)", "language": "python"})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
conns = {}  # (thread, port): a kept connection
failures = []


def one(k, port):
    c = conns.get((k, port))
    if c is None:
        c = conns[(k, port)] = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
        c.connect()
    elif c.sock is not None:
        # a kept connection the server closed while idle: a new one, as any
        # HTTP client would, before the clock starts
        try:
            c.sock.settimeout(0)
            gone = c.sock.recv(1, __import__("socket").MSG_PEEK) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        c.sock.settimeout(120)
        if gone:
            c.close()
            c.connect()
    t0 = time.perf_counter()
    try:
        c.request("POST", "/run_code", body, headers)
        r = c.getresponse()
        d = json.loads(r.read())
        ok = r.status == 200 and (d.get("run_result") or {}).get("stdout") == "1\n"
        if not ok:
            why = "%d %.200s" % (r.status, json.dumps(d))
    except (OSError, http.client.HTTPException, ValueError) as e:
        c.close()
        conns.pop((k, port), None)
        ok, why = False, repr(e)
    if not ok and not failures:
        failures.append(why)
        print("# first failure (port %s): %s" % (port, why), file=sys.stderr)
    return time.perf_counter() - t0, ok


def burst(port):
    lat, bad, lock = [], [0], threading.Lock()

    def worker(k):
        for _ in range(k, requests, conc):
            dt, ok = one(k, port)
            with lock:
                lat.append(dt)
                bad[0] += not ok

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(conc)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, lat, bad[0]


# the hop alone: GET /v1/ping (no cell), one at a time, in turn
pings = {name: [] for name, _ in targets}
for i in range(300):
    for name, port in targets:
        c = conns.get(("ping", port)) or conns.setdefault(
            ("ping", port), http.client.HTTPConnection("127.0.0.1", int(port), timeout=30))
        t0 = time.perf_counter()
        c.request("GET", "/v1/ping", headers=headers)
        c.getresponse().read()
        if i >= 20:
            pings[name].append(time.perf_counter() - t0)

stats = {name: {"wall": 0.0, "lat": [], "bad": 0} for name, _ in targets}
for name, port in targets:  # warm: connections, pools
    burst(port)
for r in range(rounds):
    order = targets if r % 2 == 0 else targets[::-1]
    for name, port in order:
        wall, lat, bad = burst(port)
        s = stats[name]
        s["wall"] += wall
        s["lat"] += lat
        s["bad"] += bad


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000


print("%-8s %9s %9s %9s %7s" % ("target", "req/s", "p50 ms", "p99 ms", "failed"))
res = {}
for name, _ in targets:
    s = stats[name]
    res[name] = (len(s["lat"]) / s["wall"], pct(s["lat"], 50), pct(s["lat"], 99))
    print("%-8s %9.1f %9.1f %9.1f %7d" % (name, *res[name], s["bad"]))
print("GET /v1/ping one at a time, p50 ms: " + ", ".join(
    "%s %.3f" % (name, pct(pings[name], 50)) for name, _ in targets))
d = res[targets[0][0]]
for name, _ in targets[1:]:
    x = res[name]
    print("%s / %s: req/s x%.2f, p50 x%.2f (%+.1f %%), p99 x%.2f" % (
        name, targets[0][0], x[0] / d[0], x[1] / d[1], (x[1] / d[1] - 1) * 100, x[2] / d[2]))
sys.exit(1 if any(stats[n]["bad"] for n, _ in targets) else 0)
PY
echo "/run_code print(1): $rounds rounds x $requests requests per target, concurrency $conc, $(nproc) cores"
python3 "$work/load.py" "direct=$p0,nginx-1=$n1,nginx-3=$n3" "$work/token" "$rounds" "$requests" "$conc"
