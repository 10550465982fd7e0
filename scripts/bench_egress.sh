#!/usr/bin/env bash
# Egress benchmarks (issue: egress by allowlist), each against a peer in the
# same run:
#   1. cold start of a cell with an allowlist (the in-cell listener, the
#      socket handed over, the proxy thread) against one without;
#   2. a 10 MiB HTTPS download through the proxy (CONNECT, SNI checked,
#      relayed) from a loopback fixture, against the same download by curl
#      on the host, directly: the proxy's throughput as a share of direct.
# usage: scripts/bench_egress.sh [ROUNDS]   (default 100; downloads: 15)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-100}
downloads=15
[ -x build/sandcell ] || scripts/setup.sh
cmake --build build --target alt >/dev/null
alt=build/tests/alt
sc=$PWD/build/sandcell
command -v openssl >/dev/null && command -v curl >/dev/null || {
	echo "egress: needs openssl and curl on the host; skipped"
	exit 0
}
work=$(mktemp -d /tmp/sandcell-bench-egress.XXXXXX)
chmod 755 "$work"
export SANDCELL_ROOT="$work/root"
fx_pid=
trap '[ -n "$fx_pid" ] && kill "$fx_pid" 2>/dev/null; rm -rf "$work"' EXIT

mkdir -p "$work/www"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
	-subj /CN=bench.test -addext "subjectAltName=DNS:bench.test" 2>/dev/null
head -c $((10 << 20)) /dev/urandom >"$work/www/big"
chmod -R a+rX "$work"
/usr/bin/python3 tests/integration/egress_fixture.py "$work/www" "$work/cert.pem" "$work/key.pem" \
	"$work/conns" "$work/ports" &
fx_pid=$!
for _ in $(seq 100); do [ -s "$work/ports" ] && break; sleep 0.1; done
read -r hp _ <"$work/ports"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
med() { awk -v i="$1" '$1 == i { print $2 }' <<<"$2"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

net=(--net-host "bench.test=127.0.0.1" --allow-net "bench.test:$hp")
out=$($alt "$rounds" ::: "$sc" run -- /bin/true ::: "$sc" run "${net[@]}" -- /bin/true)
s=$(med 1 "$out") e=$(med 2 "$out")
printf 'egress cold start   allowlist %7.2f ms   none %7.2f ms   cost %s%% (goal < 10%%)\n' "$e" "$s" \
	"$(awk -v a="$e" -v b="$s" 'BEGIN { printf "%.1f", (a - b) / b * 100 }')"

# curl's own speed (bytes/s of the transfer, the cell's start not counted)
url="https://bench.test:$hp/big"
direct=() proxied=()
"$sc" create "${net[@]}" -v "$work/cert.pem:/ca.pem:ro" bench-egress >/dev/null
for _ in $(seq "$downloads"); do
	direct+=("$(curl -s -o /dev/null --cacert "$work/cert.pem" --resolve "bench.test:$hp:127.0.0.1" \
		-w '%{speed_download}' "$url")")
	proxied+=("$("$sc" exec bench-egress -- curl -s -o /dev/null --cacert /ca.pem \
		-w '%{speed_download}' "$url")")
done
"$sc" rm -f bench-egress >/dev/null
d=$(printf '%s\n' "${direct[@]}" | median) p=$(printf '%s\n' "${proxied[@]}" | median)
printf 'egress 10 MiB HTTPS proxy %7.1f MB/s   direct on the host %7.1f MB/s   ratio %s (goal >= 0.80)\n' \
	"$(awk -v v="$p" 'BEGIN { print v / 1e6 }')" "$(awk -v v="$d" 'BEGIN { print v / 1e6 }')" \
	"$(ratio "$p" "$d")"
