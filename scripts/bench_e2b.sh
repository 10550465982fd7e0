#!/usr/bin/env bash
# E2B's API (docs/e2b.md) against sandcell's own, one `sandcell serve`,
# alternating round by round in one node process:
#   1. `sandbox.commands.run('true')` through the official E2B SDK (npm
#      e2b, Connect streaming over HTTP/1.1) against POST
#      /cells/{id}/exec of the same command (the SDK runs /bin/bash -l -c
#      CMD) from a keep-alive client (node's fetch), each into its own
#      long-lived cell; medians, p90s and the ratio;
#   2. create-to-first-command: Sandbox.create + commands.run('true')
#      against POST /cells + exec, each removed afterwards.
# The SDK is installed as t_e2b.sh installs it (npm, cached in
# /var/tmp/sandcell-test-npm).
# usage: scripts/bench_e2b.sh [ROUNDS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}
[ -x build/sandcell ] || scripts/setup.sh
E2B_VERSION=2.51.0
CI_VERSION=2.8.0 # @e2b/code-interpreter
CACHE=/var/tmp/sandcell-test-npm/e2b-$E2B_VERSION-ci-$CI_VERSION
if [ ! -f "$CACHE/node_modules/@e2b/code-interpreter/package.json" ]; then
	mkdir -p /var/tmp/sandcell-test-npm
	scratch=$(mktemp -d /tmp/sandcell-npm.XXXXXX)
	(cd "$scratch" && npm install --no-audit --no-fund --loglevel=error "e2b@$E2B_VERSION" "@e2b/code-interpreter@$CI_VERSION" >/dev/null)
	rm -rf "$CACHE.tmp" && mkdir -p "$CACHE.tmp" && mv "$scratch/node_modules" "$CACHE.tmp/" &&
		mv "$CACHE.tmp" "$CACHE"
	rm -rf "$scratch"
fi
work=$(mktemp -d /tmp/sandcell-bench-e2b.XXXXXX)
chmod 755 "$work"
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
printf 'e2b_%s\n' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$work/token"
chmod 600 "$work/token"
SANDCELL_ROOT="$work/root" build/sandcell serve --listen 127.0.0.1:0 --token-file "$work/token" \
	--port-file "$work/port" --pool 4 >/dev/null 2>"$work/serve.err" &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")"
ln -s "$CACHE/node_modules" "$work/node_modules"
cat >"$work/bench.mjs" <<'EOF'
import { Sandbox } from "e2b";
const [url, token, rounds] = [process.argv[2], process.argv[3], +process.argv[4]];
const H = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
const post = async (p, body) => {
	const r = await fetch(url + p, { method: "POST", headers: H, body: JSON.stringify(body) });
	if (!r.ok) throw new Error(`${p}: ${r.status}`);
	return r.json();
};
const del = async (p) => { await (await fetch(url + p, { method: "DELETE", headers: H })).arrayBuffer(); };
const t = async (f) => { const s = performance.now(); await f(); return performance.now() - s; };
const q = (a, p) => [...a].sort((x, y) => x - y)[Math.floor(a.length * p)];
const show = (name, a, b) => console.log(`${name}: e2b p50 ${q(a, .5).toFixed(2)} ms p90 ${q(a, .9).toFixed(2)} ms` +
	`   /cells p50 ${q(b, .5).toFixed(2)} ms p90 ${q(b, .9).toFixed(2)} ms` +
	`   ratio ${(q(a, .5) / q(b, .5)).toFixed(2)} (+${(q(a, .5) - q(b, .5)).toFixed(2)} ms)`);

const sbx = await Sandbox.create();
const cell = await post("/cells", {});
const e2bRun = async () => { const r = await sbx.commands.run("true"); if (r.exitCode !== 0) throw r; };
// the same command: the SDK runs /bin/bash -l -c CMD
const argv = ["/bin/bash", "-l", "-c", "true"];
const cellRun = async () => { const r = await post(`/cells/${cell.id}/exec`, { argv }); if (r.exit_code !== 0) throw r; };
for (let i = 0; i < 5; i++) { await e2bRun(); await cellRun(); }
const a = [], b = [];
for (let i = 0; i < rounds; i++) { a.push(await t(e2bRun)); b.push(await t(cellRun)); }
show("exec 'true'", a, b);
await sbx.kill();
await del(`/cells/${cell.id}`);

const c = [], d = [];
const n = Math.max(10, Math.floor(rounds / 10));
for (let i = 0; i < n; i++) {
	let s;
	c.push(await t(async () => { s = await Sandbox.create(); await s.commands.run("true"); }));
	await s.kill();
	let id;
	d.push(await t(async () => { id = (await post("/cells", {})).id; await post(`/cells/${id}/exec`, { argv }); }));
	await del(`/cells/${id}`);
}
show(`create + first command (${n} rounds)`, c, d);
EOF
cd "$work" && E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$(cat token)" \
	node bench.mjs "$url" "$(cat token)" "$rounds"
