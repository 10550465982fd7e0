// The official E2B JS SDK (npm e2b, public calls only) against
// `sandcell serve` (run by t_e2b.sh, which sets E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY to the server and its token).
// Prints one "ok   - ..." or "FAIL - ..." line per check and "done" last;
// kills every sandbox it made except one (the test checks the server
// removes it on SIGTERM).
import { Sandbox, CommandExitError, NotFoundError, FileNotFoundError, AuthenticationError,
	SandboxError, RateLimitError } from "e2b";
import { Sandbox as CodeSandbox } from "@e2b/code-interpreter";
import http from "node:http";

const LONG = { requestTimeoutMs: 600000 }; // a loaded machine: cells may be slow
let fails = 0;
function check(desc, cond, info) {
	console.log(`${cond ? "ok  " : "FAIL"} - ${desc}${cond ? "" : " :: " + String(info === undefined ? "" : JSON.stringify(info)).slice(0, 2000)}`);
	if (!cond) fails++;
}
async function raises(fn) {
	try {
		await fn();
		return null;
	} catch (e) {
		return e;
	}
}
const tag = `t${process.pid}`;
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

const sbx = await Sandbox.create({ metadata: { suite: tag, n: "1" }, envs: { FROM_CREATE: "c1" }, ...LONG });
check("create gives a sandbox id", typeof sbx.sandboxId === "string" && sbx.sandboxId.length > 8, sbx.sandboxId);

// a command silent for longer than the server's connection timeout (30 s):
// its stream lives on keepalive events; awaited at the end
const silent = sbx.commands.run("sleep 33; echo late", { timeoutMs: 600000, ...LONG });

// --- commands ---
let r = await sbx.commands.run('echo out; echo err >&2', LONG);
check("commands.run: stdout, stderr, exit code 0",
	r.exitCode === 0 && r.stdout === "out\n" && r.stderr === "err\n", r);
r = await sbx.commands.run("pwd", LONG);
check("a command's default cwd is /home/user", r.stdout === "/home/user\n", r);
r = await sbx.commands.run("pwd", { cwd: "/tmp", ...LONG });
check("cwd is honoured", r.stdout === "/tmp\n", r);
r = await sbx.commands.run('echo "$FROM_CREATE $MINE"', { envs: { MINE: "m1" }, ...LONG });
check("envs of the create and of the command both reach it", r.stdout === "c1 m1\n", r);
r = await sbx.commands.run("id -u", { user: "root", ...LONG });
check("user root runs as uid 0", r.stdout === "0\n", r);
let e = await raises(() => sbx.commands.run("echo before; exit 7", LONG));
check("a non-zero exit raises CommandExitError with its code and output",
	e instanceof CommandExitError && e.exitCode === 7 && e.stdout === "before\n", String(e));
const seen = [];
r = await sbx.commands.run("for i in 1 2 3; do echo line$i; done; echo oops >&2", {
	onStdout: (d) => seen.push("o:" + d), onStderr: (d) => seen.push("e:" + d), ...LONG });
check("onStdout and onStderr get the output as it comes",
	seen.join("").includes("o:line1") && seen.join("").includes("e:oops") && r.stdout === "line1\nline2\nline3\n", seen);

r = await sbx.commands.run("head -c 3000000 /dev/zero | tr '\\0' a", LONG);
check("a command's output is cut at the server's output limit (1 MiB a stream)",
	r.stdout.length === 1048576 && /^a+$/.test(r.stdout), r.stdout.length);

// background, list, kill
const bg = await sbx.commands.run("sleep 600", { background: true, ...LONG });
check("a background command has a pid", typeof bg.pid === "number" && bg.pid > 0, bg.pid);
const procs = await sbx.commands.list(LONG);
check("commands.list shows the background command", procs.some((p) => p.pid === bg.pid && p.cmd === "/bin/bash"), procs);
check("commands.kill kills it", (await sbx.commands.kill(bg.pid, LONG)) === true);
e = await raises(() => bg.wait());
check("... and its wait ends with an error", e instanceof CommandExitError || e instanceof SandboxError, String(e));
check("... and it is no longer listed", !(await sbx.commands.list(LONG)).some((p) => p.pid === bg.pid));
check("killing an unknown pid says false", (await sbx.commands.kill(999999, LONG)) === false);

// a background command outlives the stream that started it, as on E2B:
// disconnect() drops the stream, the command runs on (its counter goes
// on past the count at the disconnect), listed, reached by connect, killed
const ctr = `/tmp/outlive-${tag}`;
const dh = await sbx.commands.run(`i=0; while :; do i=$((i+1)); echo $i > ${ctr}.n; mv ${ctr}.n ${ctr}; echo tick$i; sleep 0.05; done`,
	{ background: true, ...LONG });
const ctrOf = async () => Number((await sbx.commands.run(`cat ${ctr} 2>/dev/null || echo 0`, LONG)).stdout);
const waitCtr = async (n) => { // the counter past n, or -1 after a minute
	for (let i = 0; i < 600; i++) {
		const v = await ctrOf();
		if (v > n) return v;
		await sleep(100);
	}
	return -1;
};
await waitCtr(0);
await dh.disconnect();
const atDrop = await ctrOf();
const later = await waitCtr(atDrop + 40); // 2 s of its life after the stream went
check("a background command runs on after its handle's disconnect()", atDrop > 0 && later > atDrop + 40, [atDrop, later]);
check("... and is still listed", (await sbx.commands.list(LONG)).some((p) => p.pid === dh.pid));
const dw = [];
let dwSeen;
const dwGot = new Promise((ok) => { dwSeen = ok; });
const dc = await sbx.commands.connect(dh.pid, { onStdout: (d) => { dw.push(d); dwSeen(); }, ...LONG });
await dwGot;
check("... commands.connect(pid) reaches it: its output from then on", /tick[0-9]+/.test(dw.join("")) && !dw.join("").includes("tick1\n"), dw.join("").slice(0, 200));
check("... commands.kill(pid) ends it", (await sbx.commands.kill(dh.pid, LONG)) === true);
e = await raises(() => dc.wait());
check("... its watcher sees the end", e instanceof CommandExitError || e instanceof SandboxError, String(e));
check("... and it is no longer listed", !(await sbx.commands.list(LONG)).some((p) => p.pid === dh.pid));

// --- stdin: started with stdin: true, fed by sendStdin, ended by closeStdin ---
const cat = await sbx.commands.run("cat; echo done", { background: true, stdin: true, ...LONG });
await sbx.commands.sendStdin(cat.pid, "line one\n", LONG);
await sbx.commands.sendStdin(cat.pid, new TextEncoder().encode("line two\n"), LONG);
await sbx.commands.closeStdin(cat.pid, LONG);
r = await cat.wait();
check("sendStdin (text and bytes) reaches the command, closeStdin ends its input",
	r.exitCode === 0 && r.stdout === "line one\nline two\ndone\n", r);
const noIn = await sbx.commands.run("sleep 600", { background: true, ...LONG });
e = await raises(() => sbx.commands.sendStdin(noIn.pid, "x", LONG));
check("sendStdin to a command started without stdin is refused", e !== null, String(e));
await sbx.commands.kill(noIn.pid, LONG);
e = await raises(() => sbx.commands.sendStdin(999999, "x", LONG));
check("sendStdin to an unknown pid is refused", e !== null, String(e));

// --- commands.connect: watchers of a running command, each from when it came ---
const ticker = await sbx.commands.run("for i in $(seq 1 40); do echo t$i; sleep 0.1; done; echo fin >&2; exit 5",
	{ background: true, ...LONG });
await sleep(1000);
const w1 = [], w2 = [];
const cw1 = await sbx.commands.connect(ticker.pid, { onStdout: (d) => w1.push(d), ...LONG });
const cw2 = await sbx.commands.connect(ticker.pid, { onStdout: (d) => w2.push(d), ...LONG });
const ew1 = await raises(() => cw1.wait()), ew2 = await raises(() => cw2.wait());
const ew0 = await raises(() => ticker.wait());
const linesOf = (a) => a.join("").split("\n").filter(Boolean);
check("commands.connect: two watchers each get the output from when they came, and the end",
	[ew1, ew2].every((x) => x instanceof CommandExitError && x.exitCode === 5 && x.stderr === "fin\n") &&
	linesOf(w1).at(-1) === "t40" && linesOf(w2).at(-1) === "t40" && !linesOf(w1).includes("t1") &&
	linesOf(w1).length >= 10, [String(ew1), String(ew2), w1.join(""), w2.join("")]);
check("... and the command's own handle still gets all of it",
	ew0 instanceof CommandExitError && ew0.exitCode === 5 && ew0.stdout.startsWith("t1\nt2\n"), String(ew0));
e = await raises(() => sbx.commands.connect(999999, LONG));
check("connect to an unknown pid raises NotFoundError", e instanceof NotFoundError, String(e));
const slp = await sbx.commands.run("sleep 600", { background: true, ...LONG });
const watchers = [];
for (let i = 0; i < 8; i++) watchers.push(await sbx.commands.connect(slp.pid, LONG));
e = await raises(() => sbx.commands.connect(slp.pid, LONG));
check("a 9th watcher of one command is refused (8 at most)", e instanceof RateLimitError, String(e));
for (const x of watchers.slice(1)) await x.disconnect();
await sleep(300);
e = await raises(() => sbx.commands.connect(slp.pid, LONG).then((h) => h.disconnect()));
check("... and taken again once others went away", e === null, String(e));
await sbx.commands.kill(slp.pid, LONG);
e = await raises(() => watchers[0].wait());
check("a watcher of a killed command sees its end", e instanceof CommandExitError || e instanceof SandboxError, String(e));

// --- PTYs: bash on a pty of the cell's own ---
let ptyOut = "";
const ptyDec = new TextDecoder();
const term = await sbx.pty.create({ cols: 77, rows: 21, onData: (d) => { ptyOut += ptyDec.decode(d, { stream: true }); }, ...LONG });
const ptyWait = async (re) => {
	for (let i = 0; i < 1200 && !re.test(ptyOut); i++) await sleep(50);
	return re.test(ptyOut);
};
const typed = (t) => sbx.pty.sendInput(term.pid, new TextEncoder().encode(t), LONG);
await typed("echo $((6*7)); tput cols; stty size\n");
check("pty.create: bash answers 42 and has the size asked for (77 cols, 21 rows)",
	await ptyWait(/42\r\n77\r\n21 77\r\n/), ptyOut);
check("... and it is listed", (await sbx.commands.list(LONG)).some((p) => p.pid === term.pid));
await sbx.pty.resize(term.pid, { cols: 101, rows: 33 }, LONG);
ptyOut = "";
await typed("tput cols; stty size\n");
check("pty.resize: the new size", await ptyWait(/101\r\n33 101\r\n/), ptyOut);
await typed("exit 3\n");
e = await raises(() => term.wait());
check("exit in the pty ends it with its code", e instanceof CommandExitError && e.exitCode === 3, String(e));
const term2 = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {}, ...LONG });
check("pty.kill: true", (await sbx.pty.kill(term2.pid, LONG)) === true);
e = await raises(() => term2.wait());
check("... and its wait ends", e !== null, String(e));
e = await raises(() => sbx.pty.resize(999999, { cols: 10, rows: 10 }, LONG));
check("pty.resize of an unknown pid raises NotFoundError", e instanceof NotFoundError, String(e));
e = await raises(() => sbx.pty.create({ cols: 100000, rows: 24, onData: () => {}, ...LONG }));
check("a pty of 100000 columns is refused", e !== null, String(e));
const noPty = await sbx.commands.run("sleep 600", { background: true, ...LONG });
e = await raises(() => sbx.pty.sendInput(noPty.pid, new Uint8Array([65]), LONG));
check("pty.sendInput to a command that has no pty is refused", e !== null && /no pty/.test(String(e)), String(e));
await sbx.commands.kill(noPty.pid, LONG);

// --- files ---
const info = await sbx.files.write("notes/a.txt", "hello files\n", LONG);
check("files.write of a relative path lands under /home/user", info.path === "/home/user/notes/a.txt", info);
check("files.read gives the text back", (await sbx.files.read("notes/a.txt", LONG)) === "hello files\n");
r = await sbx.commands.run("cat /home/user/notes/a.txt", LONG);
check("a command sees the file written", r.stdout === "hello files\n", r);
const bin = new Uint8Array(70000);
for (let i = 0; i < bin.length; i++) bin[i] = (i * 7 + 3) & 0xff;
await sbx.files.write("/tmp/bin.dat", bin.buffer, LONG);
const back = await sbx.files.read("/tmp/bin.dat", { format: "bytes", ...LONG });
check("binary round trip (70000 bytes, every byte value)",
	back.length === bin.length && back.every((v, i) => v === bin[i]), back.length);
// gzip: true sends the body gzipped (Content-Encoding) and asks for a
// gzipped answer: what lands in the cell is the plain bytes
await sbx.files.write("/tmp/gz.dat", bin.buffer, { gzip: true, ...LONG });
const gzBack = await sbx.files.read("/tmp/gz.dat", { format: "bytes", gzip: true, ...LONG });
const plainBack = await sbx.files.read("/tmp/gz.dat", { format: "bytes", ...LONG });
check("files.write and files.read with gzip: true round-trip the bytes",
	gzBack.length === bin.length && gzBack.every((v, i) => v === bin[i]), gzBack.length);
check("... and the cell holds them inflated",
	plainBack.length === bin.length && plainBack.every((v, i) => v === bin[i]), plainBack.length);
await sbx.files.write("/tmp/oct.txt", "octet", { useOctetStream: true, ...LONG });
check("files.write as application/octet-stream", (await sbx.files.read("/tmp/oct.txt", LONG)) === "octet");
const multi = await sbx.files.write([{ path: "m/one.txt", data: "1" }, { path: "m/two.txt", data: "22" }], LONG);
check("files.write of two files in one request", multi.length === 2 && multi[1].path === "/home/user/m/two.txt", multi);
const ls = await sbx.files.list("m", LONG);
check("files.list names the files with their type and size",
	JSON.stringify(ls.map((x) => [x.name, x.type, x.size]).sort()) === JSON.stringify([["one.txt", "file", 1], ["two.txt", "file", 2]]), ls);
check("files.exists: true for a file, false for a missing one",
	(await sbx.files.exists("m/one.txt", LONG)) === true && (await sbx.files.exists("m/nope", LONG)) === false);
check("files.makeDir makes a directory (true), and false when it exists",
	(await sbx.files.makeDir("d1/d2", LONG)) === true && (await sbx.files.makeDir("d1/d2", LONG)) === false);
// --- getHost(port): PORT-ID.DOMAIN (serve --domain), a port of the
// sandbox's own loopback, opened by its trafficAccessToken ---
function getByHost(hostName, headers) {
	const api = new URL(process.env.E2B_API_URL);
	return new Promise((resolve) => {
		http.get({ host: api.hostname, port: api.port, path: "/index.html", headers: { Host: hostName, ...headers } },
			(res) => {
				let body = "";
				res.on("data", (d) => (body += d));
				res.on("end", () => resolve({ status: res.statusCode, body }));
			}).on("error", (err) => resolve({ status: 0, body: String(err) }));
	});
}
await sbx.commands.run("mkdir -p /tmp/web && echo 'hello from getHost' > /tmp/web/index.html && " +
	"(setsid python3 -m http.server --bind 127.0.0.1 8090 -d /tmp/web >/dev/null 2>&1 </dev/null &)", LONG);
const webHost = sbx.getHost(8090);
check("getHost(8090) is 8090-ID.DOMAIN", webHost === `8090-${sbx.sandboxId}.${process.env.SC_DOMAIN}`, webHost);
check("the sandbox has a trafficAccessToken", /^[0-9a-f]{32}$/.test(sbx.trafficAccessToken || ""), sbx.trafficAccessToken);
let web = { status: 0 };
for (let i = 0; i < 100 && web.status !== 200; i++) {
	web = await getByHost(webHost, { "e2b-traffic-access-token": sbx.trafficAccessToken });
	if (web.status !== 200) await new Promise((r) => setTimeout(r, 200));
}
check("the getHost name reaches the server in the sandbox, with the traffic token",
	web.status === 200 && web.body === "hello from getHost\n", web);
web = await getByHost(webHost, {});
check("... and without it: 401", web.status === 401, web);
const st = await sbx.files.getInfo("d1/d2", LONG);
check("files.getInfo of a directory", st.type === "dir" && st.name === "d2" && st.path === "/home/user/d1/d2", st);
const mv = await sbx.files.rename("m/one.txt", "m/uno.txt", LONG);
check("files.rename moves a file", mv.path === "/home/user/m/uno.txt" && (await sbx.files.read("m/uno.txt", LONG)) === "1", mv);
await sbx.files.remove("m", LONG);
check("files.remove removes a directory tree", (await sbx.files.exists("m", LONG)) === false);
e = await raises(() => sbx.files.read("no/such/file", LONG));
check("reading a missing file raises NotFoundError", e instanceof NotFoundError || e instanceof FileNotFoundError, String(e));
e = await raises(() => sbx.files.list("no/such/dir", LONG));
check("listing a missing directory raises NotFoundError", e instanceof NotFoundError, String(e));
e = await raises(() => sbx.files.read("../../etc/shadow", LONG));
check("a path with '..' is refused", e !== null && !(typeof e === "string"), String(e));

// --- files.watchDir: a listing loop in the cell, its differences as events ---
const waitFor = async (fn) => { // fn's truth within 10 s
	for (let i = 0; i < 200 && !(await fn()); i++) await sleep(50);
	return fn();
};
await sbx.commands.run("mkdir -p w/sub && echo a > w/keep && echo b > w/gone && echo c > w/mod", LONG);
const wev = [];
const wh = await sbx.files.watchDir("w", (ev) => wev.push(`${ev.type}:${ev.name}`), LONG);
await sbx.commands.run("echo n > w/new; rm w/gone; echo more >> w/mod; chmod 700 w/keep; echo d > w/sub/deep", LONG);
const wantW = ["create:new", "remove:gone", "write:mod", "chmod:keep"];
await waitFor(() => wantW.every((x) => wev.includes(x)));
await sleep(1200); // a listing or two more: nothing else comes
check("watchDir: create, remove, write and chmod events, named relative to the dir, not below it",
	wantW.every((x) => wev.includes(x)) && wev.length === 4, wev);
const watching = async () => Number((await sbx.commands.run(
	"grep -ls 'min[d]epth' /proc/[0-9]*/cmdline | wc -l", LONG)).stdout);
check("... its listing loop runs in the cell", (await watching()) >= 1);
await wh.stop();
check("stop() ends it: the loop is gone from the cell", await waitFor(async () => (await watching()) === 0));
const rev = [];
const rh = await sbx.files.watchDir("/home/user/w", (ev) => rev.push(`${ev.type}:${ev.name}`),
	{ recursive: true, ...LONG });
await sbx.commands.run("echo e > w/sub/deep2; rm w/new", LONG);
await waitFor(() => rev.includes("create:sub/deep2") && rev.includes("remove:new"));
check("watchDir recursive: events below the dir, named by their path under it",
	rev.includes("create:sub/deep2") && rev.includes("remove:new"), rev);
await rh.stop();
e = await raises(() => sbx.files.watchDir("no/such/dir", () => {}, LONG));
check("watchDir of a missing directory raises NotFoundError", e instanceof NotFoundError, String(e));
e = await raises(() => sbx.files.watchDir("w/keep", () => {}, LONG));
check("watchDir of a file is refused", e !== null && !(e instanceof NotFoundError), String(e));
const many = [];
for (let i = 0; i < 32; i++) many.push(await sbx.files.watchDir("w", () => {}, LONG));
e = await raises(() => sbx.files.watchDir("w", () => {}, LONG));
check("a 33rd stream on the sandbox is refused (32 at most)", e instanceof RateLimitError, String(e));
for (const x of many) await x.stop();
e = null;
for (let i = 0; i < 50; i++) {
	e = await raises(() => sbx.files.watchDir("w", () => {}, LONG).then((h) => h.stop()));
	if (e === null) break;
	await sleep(100);
}
check("... and taken again once they stopped", e === null, String(e));
await sbx.commands.run("mkdir big && cd big && seq 1 9000 | xargs touch", LONG);
e = await raises(() => sbx.files.watchDir("big", () => {}, LONG));
check("watchDir of 9000 entries is refused (8192 at most: resource_exhausted)", e instanceof RateLimitError, String(e));
await sbx.commands.run("rm -rf big w", LONG);

// --- metrics: a sample taken when asked ---
let mt = await sbx.getMetrics(LONG);
check("getMetrics: one sample, with the sandbox's cores, memory and disk",
	mt.length === 1 && mt[0].timestamp instanceof Date && mt[0].cpuCount >= 1 && mt[0].memUsed > 0 &&
	mt[0].memTotal >= mt[0].memUsed && mt[0].diskTotal > 0 && mt[0].diskUsed >= 0, mt);
const disk0 = mt[0].diskUsed;
await sbx.commands.run("head -c 8000000 /dev/zero > /home/user/big.bin; " +
	"end=$(($(date +%s) + 2)); while [ $(date +%s) -lt $end ]; do :; done", LONG);
mt = await sbx.getMetrics(LONG);
check("... after 8 MB written and 2 s of a busy loop: the disk and the CPU show them",
	mt.length === 1 && mt[0].diskUsed >= disk0 + 7500000 && mt[0].cpuUsedPct > 1 && mt[0].cpuUsedPct <= 100, mt);
mt = await Sandbox.getMetrics(sbx.sandboxId, { start: new Date(Date.now() + 3600e3), ...LONG });
check("... and none for a start in the future", Array.isArray(mt) && mt.length === 0, mt);
await sbx.files.remove("/home/user/big.bin", LONG);

// --- two sandboxes ---
const other = await Sandbox.create({ metadata: { suite: tag, n: "2" }, ...LONG });
web = await getByHost(webHost, { "e2b-traffic-access-token": other.trafficAccessToken });
check("another sandbox's traffic token does not open this one's ports", web.status === 401, web);
check("a second sandbox does not see the first's files", (await other.files.exists("/home/user/notes/a.txt", LONG)) === false);
r = await other.commands.run("echo \"[$FROM_CREATE]\"", LONG);
check("... nor its envs", r.stdout === "[]\n", r);
let listed = await Sandbox.list({ query: { metadata: { suite: tag } }, ...LONG }).nextItems();
check("Sandbox.list by metadata finds both", listed.length === 2, listed);
listed = await Sandbox.list({ query: { metadata: { suite: tag, n: "2" } }, ...LONG }).nextItems();
check("... and by two keys just the second", listed.length === 1 && listed[0].sandboxId === other.sandboxId, listed);
const gi = await Sandbox.getInfo(sbx.sandboxId, LONG);
check("getInfo gives the metadata back", gi.metadata.suite === tag && gi.metadata.n === "1", gi);
const again = await Sandbox.connect(sbx.sandboxId, LONG);
r = await again.commands.run("cat notes/a.txt", LONG);
check("Sandbox.connect reaches the same sandbox", r.stdout === "hello files\n", r);

// --- an envd call without the access token ---
const noToken = await Sandbox.connect(other.sandboxId, LONG);
noToken.envdAccessToken = undefined; // what a client that does not have it sends
e = await raises(() => noToken.commands.run("true", LONG));
check("a command without the sandbox's access token is refused (AuthenticationError)",
	e instanceof AuthenticationError, String(e));

// --- a wrong key ---
e = await raises(() => Sandbox.create({ apiKey: "e2b_0000000000000000000000000000000000000000", ...LONG }));
check("a wrong API key raises AuthenticationError", e instanceof AuthenticationError, String(e));

// --- setTimeout expiry ---
await other.setTimeout(1000, LONG);
let gone = false;
for (let i = 0; i < 600 && !gone; i++) {
	gone = !(await Sandbox.list({ query: { metadata: { suite: tag, n: "2" } }, ...LONG }).nextItems()).length;
	if (!gone) await new Promise((ok) => setTimeout(ok, 100));
}
check("a sandbox dies when its time is up (setTimeout 1 s)", gone);
check("... and kill of it then says false", (await Sandbox.kill(other.sandboxId, LONG)) === false);

// --- fork: the sandbox's files in new sandboxes, each on its own ---
await sbx.commands.run("echo parent-state > /home/user/forked.txt", LONG);
const forks = await sbx.fork({ count: 2, timeoutMs: 600000, ...LONG });
check("sandbox.fork({count: 2}) gives two new sandboxes",
	forks.length === 2 && forks.every((f) => f instanceof Sandbox) &&
	new Set([sbx.sandboxId, ...forks.map((f) => f.sandboxId)]).size === 3, forks.map(String));
r = await forks[0].commands.run("cat /home/user/forked.txt && echo mine > /home/user/only0.txt", LONG);
check("a fork has the parent's files", r.stdout === "parent-state\n", r);
check("a fork's write is seen by neither its sibling nor the parent",
	!(await forks[1].files.exists("/home/user/only0.txt", LONG)) &&
	!(await sbx.files.exists("/home/user/only0.txt", LONG)));
r = await forks[1].commands.run('echo "[$FROM_CREATE]"', LONG);
check("a fork has the parent's envs", r.stdout === "[c1]\n", r);
const fi = await Sandbox.getInfo(forks[1].sandboxId, LONG);
check("... and its metadata", fi.metadata.suite === tag && fi.metadata.n === "1", fi);
const ft = Object.assign(await Sandbox.connect(forks[1].sandboxId, LONG));
ft.envdAccessToken = sbx.envdAccessToken;
e = await raises(() => ft.commands.run("true", LONG));
check("a fork has an access token of its own (the parent's is refused)", e instanceof AuthenticationError, String(e));
r = await sbx.commands.run("cat /home/user/forked.txt", LONG);
check("the parent runs on after the fork", r.stdout === "parent-state\n", r);
for (const f of forks) check("kill a fork", (await f.kill(LONG)) === true);
e = await raises(() => Sandbox.fork(`${sbx.sandboxId.split("-")[0]}-0123456789abcdef`, LONG));
check("fork of an unknown sandbox raises NotFoundError", e instanceof NotFoundError, String(e));

// --- pause and resume: the processes and their memory kept ---
const pz = await Sandbox.create({ metadata: { suite: tag, n: "4" }, ...LONG });
await pz.commands.run("i=0; while :; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/c; sleep 0.05; done",
	{ background: true, ...LONG });
const countOf = async (s) => Number((await s.commands.run("cat /tmp/c 2>/dev/null || echo 0", LONG)).stdout);
const waitPast = async (s, n) => {
	for (let i = 0; i < 1200; i++) {
		const v = await countOf(s);
		if (v > n) return v;
		await new Promise((ok) => setTimeout(ok, 100));
	}
	return -1;
};
const c0 = await waitPast(pz, 3);
check("pause: a counter runs in the sandbox", c0 > 3, c0);
check("sandbox.pause() of a running sandbox: true", (await pz.pause(LONG)) === true);
check("... and again: false (409, paused already)", (await Sandbox.pause(pz.sandboxId, LONG)) === false);
let pi = await Sandbox.getInfo(pz.sandboxId, LONG);
check("getInfo says paused", pi.state === "paused", pi.state);
listed = await Sandbox.list({ query: { metadata: { suite: tag, n: "4" }, state: ["paused"] }, ...LONG }).nextItems();
check("Sandbox.list with state paused finds it", listed.length === 1 && listed[0].state === "paused", listed);
listed = await Sandbox.list({ query: { metadata: { suite: tag, n: "4" }, state: ["running"] }, ...LONG }).nextItems();
check("... and with state running does not", listed.length === 0, listed);
e = await raises(() => pz.commands.run("true", LONG));
check("a command in a paused sandbox is refused", e !== null, String(e));
const pc = await pz.files.read("/tmp/c", LONG).catch(() => null);
check("... its envd answers nothing (files too)", pc === null, pc);
const resumed = await Sandbox.connect(pz.sandboxId, LONG);
pi = await Sandbox.getInfo(pz.sandboxId, LONG);
check("Sandbox.connect resumes a paused sandbox", pi.state === "running", pi.state);
const c1 = await countOf(resumed);
const c2 = await waitPast(resumed, c1);
check("... whose counter goes on from its own count (memory kept)", c1 >= c0 && c2 > c1 && c2 < c1 + 400,
	[c0, c1, c2]);
check("kill the resumed sandbox", (await resumed.kill(LONG)) === true);

// --- kill twice ---
const third = await Sandbox.create({ metadata: { suite: tag, n: "3" }, ...LONG });
check("kill: true", (await third.kill(LONG)) === true);
check("kill again: false (404)", (await Sandbox.kill(third.sandboxId, LONG)) === false);
e = await raises(() => Sandbox.getInfo(third.sandboxId, LONG));
check("getInfo of a killed sandbox raises NotFoundError", e instanceof NotFoundError, String(e));

// --- the code interpreter ---
const ci = await CodeSandbox.create({ ...LONG });
let ex = await ci.runCode('x = 41\nprint("hi")', LONG);
check("runCode: stdout", JSON.stringify(ex.logs.stdout) === JSON.stringify(["hi\n"]) && !ex.error, ex);
ex = await ci.runCode("x + 1", LONG);
check("runCode: state kept between calls, the expression's value as the main result",
	ex.text === "42" && ex.executionCount === 2, ex);
ex = await ci.runCode("1/0", LONG);
check("runCode: an error with name, value and traceback",
	ex.error && ex.error.name === "ZeroDivisionError" && ex.error.value === "division by zero" &&
	ex.error.traceback.includes("1/0"), ex.error);
ex = await ci.runCode('import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()', LONG);
check("runCode: a matplotlib plot as a PNG result",
	ex.results.length === 1 && Buffer.from(ex.results[0].png || "", "base64").subarray(0, 4).toString("hex") === "89504e47", ex.results.length);
// output as it comes: the code waits (a minute at most) for a file that
// the test writes only once onStdout has had the first line, so the
// second line follows the first only if the first came before the end
const gate = `/tmp/gate-${tag}`;
const streamed = [];
let gateWrite = null;
ex = await ci.runCode(`import os, time\nprint("first", flush=True)\nfor _ in range(1200):\n    if os.path.exists(${JSON.stringify(gate)}):\n        break\n    time.sleep(0.05)\nprint("second" if os.path.exists(${JSON.stringify(gate)}) else "gave up")\n6 * 7`,
	{ onStdout: (m) => { streamed.push(m.line); if (!gateWrite) gateWrite = ci.files.write(gate, "go", LONG); }, ...LONG });
await gateWrite;
check("runCode streams: onStdout has a line while the code still runs (it waits for the test's answer to it)",
	streamed.join("") === "first\nsecond\n" && ex.logs.stdout.join("") === "first\nsecond\n" && ex.text === "42", [streamed, ex.logs, ex.text]);
const errSeen = [];
ex = await ci.runCode('import sys\nprint("warned", file=sys.stderr)\nprint("Out[9]: not the value")\nraise ValueError("bad")',
	{ onStderr: (m) => errSeen.push(m.line), ...LONG });
check("... stderr too, and a printed Out[9]: line is output, not the value, when the code fails",
	errSeen.join("").startsWith("warned\n") && ex.logs.stdout.join("") === "Out[9]: not the value\n" && ex.text === undefined &&
	ex.error && ex.error.name === "ValueError" && ex.error.value === "bad", [errSeen, ex.logs, ex.error]);
e = await raises(() => ci.runCode("DISPLAY 1", { language: "cobol", ...LONG }));
check("runCode in a language not served is refused (400)", e instanceof SandboxError && /400/.test(String(e)), String(e));
// contexts: an interpreter each, beside the sandbox's own session
const k1 = await ci.createCodeContext({ cwd: "/tmp", ...LONG });
check("createCodeContext: an id, python, its cwd", typeof k1.id === "string" && k1.id.length === 32 && k1.language === "python" && k1.cwd === "/tmp", k1);
const k2 = await ci.createCodeContext(LONG);
check("... the default cwd is /home/user", k2.cwd === "/home/user", k2);
ex = await ci.runCode("import os\nx = 'one'\nprint(os.getcwd())", { context: k1, ...LONG });
check("runCode in a context: its cwd", ex.logs.stdout.join("") === "/tmp\n" && !ex.error, ex);
ex = await ci.runCode("x", { context: k2, ...LONG });
check("... another context has its own state (x undefined there)", ex.error && ex.error.name === "NameError", ex.error);
ex = await ci.runCode("x", LONG);
check("... and the sandbox's own session keeps its x", ex.text === "41", ex);
ex = await ci.runCode("x", { context: k1, ...LONG });
check("... and the context its own, with its own execution count", ex.text === "'one'" && ex.executionCount === 2, [ex, ex.executionCount]);
let ctxList = await ci.listCodeContexts();
check("listCodeContexts: the default and the two made", ctxList.length === 3 && ctxList.some((c) => c.id === k1.id && c.cwd === "/tmp") && ctxList.some((c) => c.id === k2.id), ctxList);
await ci.restartCodeContext(k1);
ex = await ci.runCode("import os\nprint(os.getcwd())\n'x' in globals()", { context: k1, ...LONG });
check("restartCodeContext: the state is gone, the cwd kept, the count begun again, no note on stderr",
	ex.text === "False" && ex.logs.stdout.join("") === "/tmp\n" && ex.logs.stderr.length === 0 && ex.executionCount === 1,
	[ex, ex.executionCount]);
// (the pattern 'driver[.]py' is not in its own match: neither the shell's
// command line nor a fork of it not yet exec'd is counted)
const ctxProcs = async () => Number((await ci.commands.run("grep -ls 'driver[.]py' /proc/[0-9]*/cmdline | wc -l", LONG)).stdout);
const nBefore = await ctxProcs();
await ci.removeCodeContext(k2.id);
await new Promise((ok) => setTimeout(ok, 1500));
const nAfter = await ctxProcs();
check("removeCodeContext: its interpreter is gone from the cell", nAfter === nBefore - 2, [nBefore, nAfter]);
ctxList = await ci.listCodeContexts();
check("... and it is no longer listed", ctxList.length === 2 && !ctxList.some((c) => c.id === k2.id), ctxList);
e = await raises(() => ci.runCode("1", { context: k2, ...LONG }));
check("runCode in a removed context raises NotFoundError", e instanceof NotFoundError, String(e));
e = await raises(() => ci.removeCodeContext(k2.id));
check("... and removing it again too", e instanceof NotFoundError, String(e));
const ctxMade = [];
for (let i = 0; i < 7; i++) ctxMade.push(await ci.createCodeContext(LONG));
e = await raises(() => ci.createCodeContext(LONG));
check("a 9th context is refused (8 at most)", e !== null, String(e));
for (const c of ctxMade) await ci.removeCodeContext(c);
r = await ci.commands.run("echo $((6*7))", LONG);
check("... and the code interpreter's sandbox runs commands too", r.stdout === "42\n", r);

// JavaScript, TypeScript, R and bash: each run a fresh program (sandcell
// keeps no session of theirs), in /home/user or the context's cwd
const hasTool = async (probe) => (await ci.commands.run(`${probe} >/dev/null 2>&1 && echo y || echo n`, LONG)).stdout === "y\n";
if (await hasTool("command -v node")) {
	ex = await ci.runCode('require("fs").writeFileSync("from-js.txt", "js wrote"); console.log(process.cwd(), 6 * 7)',
		{ language: "javascript", ...LONG });
	check("runCode javascript: its output, run in /home/user",
		ex.logs.stdout.join("") === "/home/user 42\n" && !ex.error && (await ci.files.read("from-js.txt", LONG)) === "js wrote", ex);
	ex = await ci.runCode("globalThis.kept = 1", { language: "js", ...LONG });
	ex = await ci.runCode("console.log(typeof globalThis.kept)", { language: "js", ...LONG });
	check("... each run a fresh program (no state kept, as docs/e2b.md says)", ex.logs.stdout.join("") === "undefined\n", ex);
	ex = await ci.runCode("console.log('before'); nope()", { language: "javascript", ...LONG });
	check("... an error: ReferenceError, its message, the stack as traceback, the output before it",
		ex.error && ex.error.name === "ReferenceError" && ex.error.value === "nope is not defined" &&
		ex.error.traceback.includes("ReferenceError") && ex.logs.stdout.join("") === "before\n", [ex.error, ex.logs]);
	const kj = await ci.createCodeContext({ language: "javascript", cwd: "/tmp", ...LONG });
	check("createCodeContext({language: 'javascript'})", kj.language === "javascript" && kj.cwd === "/tmp", kj);
	ex = await ci.runCode("console.log(process.cwd())", { context: kj, ...LONG });
	const ex2 = await ci.runCode("console.log(1)", { context: kj, ...LONG });
	check("... runs in its cwd, counted", ex.logs.stdout.join("") === "/tmp\n" && ex.executionCount === 1 && ex2.executionCount === 2,
		[ex, ex.executionCount, ex2.executionCount]);
	await ci.removeCodeContext(kj);
	check("... removed", !(await ci.listCodeContexts()).some((c) => c.id === kj.id));
	if (await hasTool("test -d /usr/share/nodejs/typescript")) {
		ex = await ci.runCode("const n: number = 41;\nconsole.log(n + 1)", { language: "typescript", ...LONG });
		check("runCode typescript", ex.logs.stdout.join("") === "42\n" && !ex.error, ex);
	} else console.log("# skip: typescript (node-typescript is not installed)");
} else console.log("# skip: javascript (node is not installed)");
if (await hasTool("command -v Rscript")) {
	ex = await ci.runCode('x <- c(1, 2, 3)\ncat(sum(x), getwd(), "\\n")\nplot(x)', { language: "r", ...LONG });
	check("runCode r: its output in /home/user, a plot as PNG",
		ex.logs.stdout.join("") === "6 /home/user \n" && !ex.error && ex.results.length === 1 &&
		Buffer.from(ex.results[0].png || "", "base64").subarray(0, 4).toString("hex") === "89504e47", [ex.logs, ex.error, ex.results.length]);
	ex = await ci.runCode('stop("boom")', { language: "r", ...LONG });
	check("... an error: its message", ex.error && /boom/.test(ex.error.value), ex.error);
} else console.log("# skip: r (r-base-core is not installed)");
ex = await ci.runCode("echo $((6*7)); pwd; echo warn >&2", { language: "bash", ...LONG });
check("runCode bash: stdout, stderr, in /home/user",
	ex.logs.stdout.join("") === "42\n/home/user\n" && ex.logs.stderr.join("") === "warn\n" && !ex.error, ex);
ex = await ci.runCode("echo partial; exit 3", { language: "bash", ...LONG });
check("... a non-zero exit is an error", ex.error && ex.error.value === "exit status 3" && ex.logs.stdout.join("") === "partial\n", ex.error);
e = await raises(() => ci.createCodeContext({ language: "cobol", ...LONG }));
check("createCodeContext in a language not served is refused", e !== null, String(e));
check("kill the code interpreter's sandbox", (await ci.kill(LONG)) === true);

// --- snapshots, on the test's second server (--allow-images, with an
// image in its store: the first one's host image cannot be committed) ---
if (process.env.SC_IMG_URL) {
	const IMG = { apiUrl: process.env.SC_IMG_URL, sandboxUrl: process.env.SC_IMG_URL, ...LONG };
	const src = await Sandbox.create(process.env.SC_IMG, IMG);
	await src.files.write("/home/user/kept.txt", "snapshot me", IMG);
	r = await src.commands.run("cat /etc/e2b-image", IMG);
	check("a sandbox of a stored image (the second server)", r.stdout === `${process.env.SC_IMG} image\n`, r);
	const snap = await src.createSnapshot(IMG);
	check("sandbox.createSnapshot(): an id, and its names", typeof snap.snapshotId === "string" && snap.snapshotId.length > 0 &&
		snap.names.includes(snap.snapshotId), snap);
	const named = await Sandbox.createSnapshot(src.sandboxId, { name: `snap-${tag}`, ...IMG });
	check("Sandbox.createSnapshot(id, {name})", named.snapshotId === `snap-${tag}`, named);
	e = await raises(() => Sandbox.createSnapshot(src.sandboxId, { name: `snap-${tag}`, ...IMG }));
	check("... a name taken is refused", e !== null, String(e));
	await src.files.write("/home/user/kept.txt", "changed after", IMG);
	const fromSnap = await Sandbox.create(snap.snapshotId, IMG);
	r = await fromSnap.commands.run("cat /home/user/kept.txt /etc/e2b-image", IMG);
	check("Sandbox.create(snapshotId): the files as they were at the snapshot, on the image",
		r.stdout === `snapshot me${process.env.SC_IMG} image\n`, r);
	let snaps = await Sandbox.listSnapshots({ sandboxId: src.sandboxId, ...IMG }).nextItems();
	check("Sandbox.listSnapshots({sandboxId}): both", snaps.length === 2 &&
		[snap.snapshotId, named.snapshotId].every((id) => snaps.some((x) => x.snapshotId === id)), snaps);
	snaps = await src.listSnapshots(IMG).nextItems();
	check("sandbox.listSnapshots(): the same", snaps.length === 2, snaps);
	e = await raises(() => Sandbox.deleteSnapshot(snap.snapshotId, IMG));
	check("deleteSnapshot while a sandbox of it runs is refused", e !== null, String(e));
	check("kill that sandbox", (await fromSnap.kill(IMG)) === true);
	check("deleteSnapshot: true", (await Sandbox.deleteSnapshot(snap.snapshotId, IMG)) === true);
	check("... and again: false", (await Sandbox.deleteSnapshot(snap.snapshotId, IMG)) === false);
	check("deleteSnapshot of the named one: true", (await Sandbox.deleteSnapshot(named.snapshotId, IMG)) === true);
	snaps = await Sandbox.listSnapshots({ sandboxId: src.sandboxId, ...IMG }).nextItems();
	check("... and none is listed", snaps.length === 0, snaps);
	e = await raises(() => Sandbox.create(snap.snapshotId, IMG));
	check("a deleted snapshot is no template", e !== null, String(e));
	check("kill the snapshot's source", (await src.kill(IMG)) === true);
} else console.log("# skip: snapshots (no second server: busybox-static is not installed)");

r = await silent.catch((x) => x);
check("a command silent for 33 s (past the 30 s connection timeout) still ends well",
	r.exitCode === 0 && r.stdout === "late\n", String(r));

// sbx stays: the server must remove it when it stops
console.log(`left ${sbx.sandboxId}`);
console.log(fails ? `fails ${fails}` : "done");
// runCode leaves its request timer running when the server refuses the
// call (the language check above): without this, node waits it out
process.exit(fails ? 1 : 0);
