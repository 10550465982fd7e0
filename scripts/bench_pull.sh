#!/usr/bin/env bash
# Pulling and starting per-task images (docs/images.md), in one run on
# this machine, against Debian's docker-registry on loopback:
#   pull    `sandcell image pull` of an image of LAYERS layers holding MB MiB
#           of incompressible data into an empty store, against what a user
#           of the OCI tools does for the same result: `skopeo copy` to an
#           OCI layout and `umoci unpack` of it (skopeo alone when umoci is
#           missing). Goal: <= 0.7x theirs (p50 of ROUNDS, alternated).
#   start   a cell's cold start (`sandcell run -- sh -c :`) on a 40-layer image
#           against a 1-layer image of the same files. Goal: <= 1.2x.
# usage: scripts/bench_pull.sh [ROUNDS] [MB] [LAYERS]   (default 3 1024 10)
# Needs docker-registry, skopeo (scripts/setup.sh), umoci (optional) and
# build/sandcell (or SANDCELL=path).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
mb=${2:-1024}
layers=${3:-10}
sc=${SANDCELL:-$PWD/build/sandcell}
tool=tests/integration/image_tool.py
[ -x "$sc" ] || { echo "no $sc: build first (scripts/setup.sh), or set SANDCELL"; exit 1; }
for t in docker-registry skopeo python3; do
	command -v "$t" >/dev/null || { echo "no $t: run scripts/setup.sh"; exit 1; }
done
work=$(mktemp -d /var/tmp/sandcell-bench-pull.XXXXXX)
reg_pid=""
cleanup() {
	[ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -S -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/reg.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
YML
docker-registry serve "$work/reg.yml" >"$work/reg.log" 2>&1 &
reg_pid=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
	sleep 0.1
done
push() { skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$1:latest" "docker://127.0.0.1:$port/$2"; }
echo "# making the images: $layers layers / $mb MiB, and 40 layers against 1"
python3 "$tool" oci-big "$work/big" "$layers" "$mb"
python3 "$tool" oci-many "$work/many" 40
python3 "$tool" oci-many-flat "$work/flat" 40
push "$work/big" bench/big:1
push "$work/many" bench/many:1
push "$work/flat" bench/flat:1
rm -rf "$work/big" "$work/many" "$work/flat"
ref="127.0.0.1:$port/bench/big:1"

now() { date +%s.%N; }
p50() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ours() {
	rm -rf "$work/root"
	local t0
	t0=$(now)
	SANDCELL_ROOT="$work/root" "$sc" image pull --insecure "$ref" big >/dev/null 2>&1
	echo "$(now) - $t0" | bc
}
theirs() {
	rm -rf "$work/oci" "$work/bundle"
	local t0
	t0=$(now)
	skopeo --insecure-policy copy -q --src-tls-verify=false "docker://$ref" "oci:$work/oci:latest"
	if command -v umoci >/dev/null; then
		umoci unpack --rootless --image "$work/oci:latest" "$work/bundle" >/dev/null
	fi
	echo "$(now) - $t0" | bc
}
: >"$work/ours" >"$work/theirs"
for r in $(seq "$rounds"); do
	ours >>"$work/ours"
	theirs >>"$work/theirs"
done
rm -rf "$work/oci" "$work/bundle"
o=$(p50 <"$work/ours") t=$(p50 <"$work/theirs")
peer="skopeo copy + umoci unpack"
command -v umoci >/dev/null || peer="skopeo copy (no umoci)"
printf 'pull of %d MiB in %d layers: sandcell %.2f s, %s %.2f s: %.2fx (goal <= 0.7x)\n' \
	"$mb" "$layers" "$o" "$peer" "$t" "$(echo "$o / $t" | bc -l)"

# cold start on 40 layers against 1 layer of the same files
export SANDCELL_ROOT="$work/root"
"$sc" image pull --insecure "127.0.0.1:$port/bench/many:1" many >/dev/null 2>&1
"$sc" image pull --insecure "127.0.0.1:$port/bench/flat:1" flat >/dev/null 2>&1
: >"$work/s40" >"$work/s1"
for r in $(seq 60); do
	for img in many flat; do
		t0=$(now)
		"$sc" run --image "$img" -- /bin/sh -c :
		echo "$(now) - $t0" | bc >>"$work/$([ "$img" = many ] && echo s40 || echo s1)"
	done
done
s40=$(p50 <"$work/s40") s1=$(p50 <"$work/s1")
printf 'cold start (run -- sh -c :): 40 layers %.1f ms, 1 layer %.1f ms: %.2fx (goal <= 1.2x)\n' \
	"$(echo "$s40 * 1000" | bc -l)" "$(echo "$s1 * 1000" | bc -l)" "$(echo "$s40 / $s1" | bc -l)"
