// The official MCP TypeScript SDK client against `sandcell mcp` (run by
// t_mcp.sh). Usage: node mcp_client.mjs SERVER_COMMAND
// Prints one "ok   - ..." or "FAIL - ..." line per check and "done" last;
// leaves one session open when it disconnects (the server must remove it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const command = process.argv[2];
const LONG = { timeout: 600000 }; // a loaded machine: cells may be slow
let fails = 0;
function check(desc, cond, info) {
	console.log(`${cond ? "ok  " : "FAIL"} - ${desc}${cond ? "" : " :: " + JSON.stringify(info).slice(0, 3000)}`);
	if (!cond) fails++;
}
const call = (name, args) => client.callTool({ name, arguments: args }, undefined, LONG);
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const json = (r) => {
	try {
		return JSON.parse(text(r));
	} catch {
		return null;
	}
};

const transport = new StdioClientTransport({ command, args: [], stderr: "inherit" });
const client = new Client({ name: "sandcell-test", version: "1.0.0" });
await client.connect(transport, LONG);
check("the server names itself sandcell", client.getServerVersion()?.name === "sandcell", client.getServerVersion());

// tools/list: every tool, each with an object schema
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const want = ["close_session", "create_session", "execute_code", "fork_cell", "get_language_details",
	"get_supported_languages", "read_file", "run_command", "write_file"];
check("tools/list has the nine tools", JSON.stringify(names) === JSON.stringify(want), names);
check("each tool has an object inputSchema",
	tools.every((t) => t.inputSchema && t.inputSchema.type === "object"), tools);
const ex = tools.find((t) => t.name === "execute_code");
check("execute_code requires code", ex && (ex.inputSchema.required || []).includes("code"), ex);

// languages
let r = await call("get_supported_languages", {});
const langs = (json(r)?.languages || []).map((l) => l.name);
check("get_supported_languages lists python and javascript",
	langs.includes("python") && langs.includes("javascript"), r);
r = await call("get_language_details", { language: "py" });
check("get_language_details resolves an alias", json(r)?.name === "python" && json(r)?.available === true, r);
r = await call("get_language_details", { language: "cobol-nope" });
check("an unknown language is a tool error", r.isError === true && /get_supported_languages/.test(text(r)), r);

// one-shot runs
r = await call("execute_code", { code: "print(6 * 7)" });
check("python runs", !r.isError && json(r)?.exit_code === 0 && json(r)?.stdout === "42\n", r);
r = await call("execute_code", { code: "console.log(1 + 2)", language: "javascript" });
check("javascript runs", !r.isError && json(r)?.exit_code === 0 && json(r)?.stdout === "3\n", r);
r = await call("execute_code", { code: "import sys\nprint('bye', file=sys.stderr)\nsys.exit(3)" });
check("an exit code comes back (not a tool error)",
	!r.isError && json(r)?.exit_code === 3 && json(r)?.stderr === "bye\n", r);
r = await call("execute_code", { code: "import time\nprint('start', flush=True)\ntime.sleep(120)", timeout: 2 });
check("a timeout is reported as limit_hit timeout", !r.isError && json(r)?.limit_hit === "timeout", r);
r = await call("execute_code", {
	code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
});
const imgs = (r.content || []).filter((c) => c.type === "image");
const png = imgs.length ? Buffer.from(imgs[0].data, "base64") : Buffer.alloc(0);
check("a plot arrives as one image/png item",
	!r.isError && imgs.length === 1 && imgs[0].mimeType === "image/png", r.content?.map((c) => c.type));
check("the image is a PNG (magic bytes)",
	png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), png.length);

r = await call("execute_code", {
	code: "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([3, 1])\nplt.show()",
});
check("code that selects Agg itself: its plot still arrives as one image/png item",
	!r.isError && (r.content || []).filter((c) => c.type === "image").length === 1, r.content?.map((c) => c.type));

// plotly (when the cell's python has it): one text/html resource item
r = await call("execute_code", { code: "import plotly" });
if (json(r)?.exit_code === 0) {
	r = await call("execute_code", {
		code: "import plotly.graph_objects as go\ngo.Figure(go.Scatter(y=[1, 3, 2])).show()",
	});
	const res = (r.content || []).filter((c) => c.type === "resource");
	const html = res.length ? Buffer.from(res[0].resource.blob || "", "base64").toString() : "";
	check("a plotly figure arrives as one text/html resource item",
		!r.isError && res.length === 1 && res[0].resource.mimeType === "text/html" &&
		html.includes("</html>"), r.content?.map((c) => c.type));
} else {
	console.log("skip - plotly (the cell's python3 has no plotly)");
}

// bad arguments are tool errors that say what to do
r = await call("execute_code", {});
check("execute_code without code is a tool error", r.isError === true && /code/.test(text(r)), r);
r = await call("execute_code", { code: "1", session_id: "mcp-no-such" });
check("an unknown session is a tool error pointing at create_session",
	r.isError === true && /create_session/.test(text(r)), r);

// a session keeps state; files and commands in it
r = await call("create_session", {});
const sid = json(r)?.session_id;
check("create_session gives a session_id", !r.isError && typeof sid === "string", r);
r = await call("execute_code", { code: "x = 41", session_id: sid });
check("a session runs code", !r.isError && json(r)?.exit_code === 0, r);
r = await call("execute_code", { code: "print(x + 1)", session_id: sid });
check("the session keeps state", !r.isError && json(r)?.stdout === "42\n", r);
r = await call("write_file", { session_id: sid, path: "notes/../../etc/x", content: "no" });
check("a path with .. is a tool error", r.isError === true, r);
r = await call("write_file", { session_id: sid, path: "hello.txt", content: "héllo\nworld\n" });
check("write_file writes", !r.isError, r);
r = await call("read_file", { session_id: sid, path: "/testbed/hello.txt" });
check("read_file reads it back", !r.isError && text(r) === "héllo\nworld\n", r);
r = await call("run_command", { session_id: sid, command: "wc -l < hello.txt; exit 4" });
check("run_command runs in the session's cell",
	!r.isError && json(r)?.exit_code === 4 && json(r)?.stdout.trim() === "2", r);
r = await call("execute_code", { code: "print(open('hello.txt').read().split()[1])", session_id: sid });
check("the session's code sees the file", json(r)?.stdout === "world\n", r);
r = await call("run_command", { command: "echo fresh; test ! -e /testbed/hello.txt" });
check("run_command without a session runs in a fresh cell",
	!r.isError && json(r)?.exit_code === 0 && json(r)?.stdout === "fresh\n", r);
// fork_cell: the session's files in new sessions, each on its own
r = await call("fork_cell", { session_id: sid, count: 2 });
const kids = (json(r)?.sessions || []).map((k) => k.session_id);
check("fork_cell gives two new session ids",
	!r.isError && kids.length === 2 && kids.every((k) => typeof k === "string" && k !== sid), r);
r = await call("read_file", { session_id: kids[0], path: "hello.txt" });
check("a forked session has the parent's file", !r.isError && text(r) === "héllo\nworld\n", r);
r = await call("run_command", { session_id: kids[0], command: "echo k0 > only.txt" });
r = await call("run_command", { session_id: kids[1], command: "test -e only.txt; echo $?" });
check("a write in one child is not in its sibling", json(r)?.stdout === "1\n", r);
r = await call("run_command", { session_id: sid, command: "test -e only.txt; echo $?" });
check("... nor in the parent", json(r)?.stdout === "1\n", r);
r = await call("execute_code", { code: "print(1 + 1)", session_id: kids[1] });
check("a forked Python session runs code", !r.isError && json(r)?.stdout === "2\n", r);
r = await call("fork_cell", { session_id: sid, replay_sessions: true });
const rk = json(r)?.sessions?.[0];
check("fork_cell with replay_sessions replays the parent's runs",
	!r.isError && rk?.replay?.ok === true && rk?.replay?.runs >= 2, r);
r = await call("execute_code", { code: "print(x + 1)", session_id: rk?.session_id });
check("... and the child has the parent's variables", !r.isError && json(r)?.stdout === "42\n", r);
if (rk?.session_id) await call("close_session", { session_id: rk.session_id });
r = await call("fork_cell", { session_id: sid, count: 0 });
check("fork_cell with count 0 is a tool error", r.isError === true && /count/.test(text(r)), r);
r = await call("fork_cell", { session_id: "mcp-no-such" });
check("fork_cell of an unknown session is a tool error", r.isError === true, r);
for (const k of kids) await call("close_session", { session_id: k });
// a session's memory limit goes to its forks
const BIG = "python3 -c 'b = bytearray(300 << 20); print(len(b) >> 20)' 2>/dev/null; echo rc=$?";
r = await call("create_session", { limits: { memory_mb: 100 } });
const msid = json(r)?.session_id;
r = await call("run_command", { session_id: msid, command: BIG });
check("a session with limits.memory_mb 100 cannot take 300 MiB", json(r)?.stdout !== "300\nrc=0\n", r);
r = await call("fork_cell", { session_id: msid });
const mk = json(r)?.sessions?.[0]?.session_id;
r = await call("run_command", { session_id: mk, command: BIG });
check("... nor can its fork", typeof mk === "string" && json(r)?.stdout !== undefined &&
	json(r)?.stdout !== "300\nrc=0\n", r);
r = await call("run_command", { session_id: sid, command: BIG });
check("... which a session without the limit can", json(r)?.stdout === "300\nrc=0\n", r);
for (const k of [msid, mk]) await call("close_session", { session_id: k });
r = await call("create_session", { image: "no-such-image" });
check("create_session with another image is a tool error", r.isError === true && /image/.test(text(r)), r);
r = await call("close_session", { session_id: sid });
check("close_session closes", !r.isError, r);
r = await call("execute_code", { code: "print(x)", session_id: sid });
check("a closed session is gone", r.isError === true, r);

// an unknown tool is a JSON-RPC error
try {
	r = await call("no_such_tool", {});
	check("an unknown tool is a JSON-RPC error", false, r);
} catch (e) {
	check("an unknown tool is a JSON-RPC error (-32602)", e.code === -32602, String(e));
}
r = await client.ping();
check("ping answers", r && typeof r === "object", r);

// one more session, left open: disconnecting must remove it
r = await call("create_session", { language: "python" });
check("a second session starts", !r.isError && json(r)?.session_id, r);
await client.close();
console.log(fails ? `# ${fails} failed` : "# all passed");
console.log("done");
