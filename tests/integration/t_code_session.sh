#!/usr/bin/env bash
# sandcell code session: a kept Python interpreter (state, errors, timeouts,
# crashes), matplotlib and plotly plots of runs and sessions, --stream events,
# plots past the limit, no status file left in the cell; the API's
# /cells/{id}/code against hostile cells (code_hostile_fixture.py), and the
# pool's workers reaping the inits of deleted cells.
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

S=sess$$
export S T_DIR
SERVE=
trap '[ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null; as_user "$SC_BIN" code session rm "$S" >/dev/null 2>&1; as_user "$SC_BIN" rm -f plain$$ >/dev/null 2>&1; t_cleanup' EXIT

src() { # src NAME: write stdin to $T_DIR/NAME, readable by the test user
	cat >"$T_DIR/$1"
	chmod 644 "$T_DIR/$1"
}
# plots_ok N: the JSON result has N plots, each a PNG (its magic bytes)
plots_ok() {
	printf '%s' "$OUT" | python3 -c 'import json,sys,base64
d=json.load(sys.stdin); n=int(sys.argv[1]); p=d["plots"]
assert len(p)==n, (len(p), n)
assert all(x["format"]=="png" and base64.b64decode(x["content_base64"])[:8]==b"\x89PNG\r\n\x1a\n" for x in p)' "$1"
}
export -f plots_ok
run() { # run [OPTIONS] FILE: session run in $S
	sc code session run "$S" "$@"
}

# --- refusals ---
sc code session start --lang ruby "$S"
check "a session of another language is refused (125)" expect_rc 125
check "the refusal says python only and points at code run" bash -c 'grep -q "python only" <<<"$ERR" && grep -q "code run" <<<"$ERR"'
printf 'print(1)\n' | src one.py
sc code session run "nosuch$$" "$T_DIR/one.py"
check "running in a session that does not exist gives 125" expect_rc 125

# --- state ---
sc code session start "$S"
check "session start: rc 0" expect_rc 0
check "session start prints the name" out_is "$S"
sc code session ls
check "session ls lists it" out_has "^$S"
printf 'x = 41\n' | src set.py
run "$T_DIR/set.py"
check "a statement prints nothing" bash -c '[ $RC -eq 0 ] && [ -z "$OUT" ]'
printf 'x + 1\n' | src expr.py
run "$T_DIR/expr.py"
check "a bare last expression is shown as Out[N]" out_is "Out[2]: 42"
printf 'import math\ndef f(v):\n    return math.sqrt(v)\n' | src def.py
run "$T_DIR/def.py"
printf 'print(f(16))\n' | src call.py
run "$T_DIR/call.py"
check "imports and functions persist" out_is "4.0"

# --- libraries in a session without network ---
run --libraries surely-not-installed-xyz --json "$T_DIR/one.py"
check "session --libraries without network: 125, SandboxError saying so" bash -c \
	'[ $RC -eq 125 ] && [ "$(jget "d[\"status\"]")" = SandboxError ] && jget "d[\"message\"]" | grep -q "no network"'
run --libraries json "$T_DIR/call.py"
check "session --libraries of an importable one: runs, state kept" out_is "4.0"

# --- an exception, then on ---
printf 'def g():\n    return 1 / 0\ng()\n' | src err.py
run "$T_DIR/err.py"
check "an exception gives exit status 1" expect_rc 1
check "the traceback names the error and the cell's line" bash -c \
	'grep -q ZeroDivisionError <<<"$ERR" && grep -q "return 1 / 0" <<<"$ERR"'
printf 'print(x)\n' | src px.py
run "$T_DIR/px.py"
check "after an exception the state is still there" out_is 41

# --- a timeout interrupts, the session survives ---
printf 'import time\ntime.sleep(600)\n' | src sleep.py
run --timeout 1 --json "$T_DIR/sleep.py"
check "a timeout gives 124" expect_rc 124
check "a timeout is TimeLimitExceeded, the session not restarted" bash -c \
	'[ "$(jget "d[\"run_result\"][\"status\"], d[\"session_restarted\"]")" = "[\"TimeLimitExceeded\", false]" ]'
check "the timeout says it interrupted the code" bash -c 'jget "d[\"run_result\"][\"stderr\"]" | grep -q KeyboardInterrupt'
run "$T_DIR/px.py"
check "after a timeout the state is still there" out_is 41

# --- a crash restarts the interpreter with a note ---
printf 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n' | src crash.py
run --json "$T_DIR/crash.py"
check "a crash is reported with 128+9" expect_rc 137
check "a crash: session_restarted, and the note says the state is lost" bash -c \
	'[ "$(jget "d[\"session_restarted\"]")" = true ] && jget "d[\"run_result\"][\"stderr\"]" | grep -q "state is lost"'
run "$T_DIR/px.py"
check "after a crash the old state is gone (NameError)" bash -c '[ $RC -eq 1 ] && grep -q NameError <<<"$ERR"'
check "the note is not repeated on the next run" bash -c '! grep -q "state is lost" <<<"$ERR"'
run "$T_DIR/one.py"
check "after a crash the session runs code again" out_is 1

# --- the fast client (lang/client/), and client.py when no supervisor runs ---
sc exec "$S" -- cat /tmp/.sandcell/session/lang
check "the session's runs use the fast client (it ran in the cell)" out_has '^fast=1$'
sc exec "$S" -- sh -c 'pkill -KILL -f "driver[.]py serve"; for i in $(seq 100); do pgrep -f "driver[.]py serve" >/dev/null || { echo gone; break; }; sleep 0.1; done'
check "the supervisor and its interpreter can be killed from inside" out_has '^gone$'
printf 'y = 5\ny * 2\n' | src sup.py
run "$T_DIR/sup.py"
check "with no supervisor, a run starts one again (client.py) and runs the code" bash -c \
	'[ $RC -eq 0 ] && grep -q "Out\[.*\]: 10" <<<"$OUT"'
check "... saying that the earlier state is lost" err_has "state is lost"
run "$T_DIR/one.py"
check "... and the next run goes through the fast client again" out_is 1
sc exec "$S" -- find /tmp -name 'run-*'
check "the runs leave no run-* status file in the cell's /tmp" bash -c '[ $RC -eq 0 ] && [ -z "$OUT" ]'

# --- plots past the limit (64): the rest are dropped, and the result says so ---
# (sc_plots writes the plot directory for matplotlib's and plotly's hooks)
printf 'import sc_plots\nfor _ in range(%d):\n    sc_plots.write(b"\\x89PNG\\r\\n\\x1a\\n", "png")\n' 65 | src p65.py
printf 'import sc_plots\nfor _ in range(%d):\n    sc_plots.write(b"\\x89PNG\\r\\n\\x1a\\n", "png")\n' 64 | src p64.py
truncated_is() { [ "$(jget 'len(d["plots"]), d["plots_truncated"]')" = "$1" ]; }
export -f truncated_is
run --clear-plots --json "$T_DIR/p65.py"
check "session: 65 plots give 64 and plots_truncated" truncated_is "[64, true]"
run --clear-plots --json "$T_DIR/p64.py"
check "session: 64 plots give 64, not truncated" truncated_is "[64, false]"
run --clear-plots --json "$T_DIR/one.py"
check "session: --clear-plots forgets that plots were dropped" truncated_is "[0, false]"
sc code run --lang python --json "$T_DIR/p65.py"
check "code run: 65 plots give 64 and plots_truncated" truncated_is "[64, true]"
sc code run --lang python --json "$T_DIR/p64.py"
check "code run: 64 plots give 64, not truncated" truncated_is "[64, false]"
if /usr/bin/Rscript -e 'quit(status = !capabilities("png"))' >/dev/null 2>&1; then
	printf 'for (i in 1:65) plot(1:i)\n' | src r65.R
	# 64 real PNGs: too large for OUT (exported) to stay in the environment
	RC=0 ERR= OUT=$(as_user "$SC_BIN" code run --lang r --json "$T_DIR/r65.R" </dev/null 2>&1 |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps([len(d["plots"]), d["plots_truncated"]]))')
	check "code run (R): 65 pages give 64 plots and plots_truncated" out_is "[64, true]"
else
	echo "skip - R's plots past the limit (no Rscript with png: apt-get install r-base-core)"
fi

# --- streaming: stdout arrives while the code still runs ---
printf 'import os, sys, time\nprint("ready")\nfor _ in range(1800):\n    if os.path.exists("/tmp/go"):\n        break\n    time.sleep(0.1)\nelse:\n    sys.exit("never saw /tmp/go")\nsys.stderr.write("done\\n")\n' | src handshake.py
out="$T_DIR/stream.out"
: >"$out" && chmod 666 "$out"
( as_user "$SC_BIN" code session run "$S" --stream "$T_DIR/handshake.py" >"$out" 2>&1 </dev/null ) &
spid=$!
# the code waits up to 180 s for /tmp/go: "ready" must come well before
for _ in $(seq 900); do grep -q '"ready' "$out" && break; sleep 0.1; done
check "--stream: the first stdout event comes while the code still runs" bash -c \
	"grep -q '{\"type\":\"stdout\",\"data\":\"ready' '$out' && ! grep -q '\"type\":\"result\"' '$out'"
as_user "$SC_BIN" exec "$S" touch /tmp/go >/dev/null 2>&1
wait $spid
check "--stream: the code then finished" bash -c "python3 -c '
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1])]
t=[e[\"type\"] for e in ev]
assert t[0]==\"stdout\" and t[-1]==\"result\" and t.count(\"result\")==1, t
assert \"stderr\" in t and t.index(\"stderr\") > t.index(\"stdout\"), t
assert ev[-1][\"result\"][\"status\"]==\"Success\", ev[-1]
' $out"

# --- plots (when the cell's python3 has matplotlib) ---
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	printf 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n' | src show1.py
	printf 'import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2])\nplt.figure(); plt.plot([3, 1])\nplt.savefig("b.png")\n' | src two.py
	sc code run --lang python --json "$T_DIR/show1.py"
	check "code run: one plt.show() gives one PNG" plots_ok 1
	sc code run --lang python --json "$T_DIR/two.py"
	check "code run: two figures (one saved, one left open) give two PNGs" plots_ok 2
	sc code run --lang python --json "$T_DIR/one.py"
	check "code run: no plot gives none" plots_ok 0
	mkdir -p "$T_DIR/plots" && chmod 777 "$T_DIR/plots"
	sc code run --lang python --out "$T_DIR/plots" "$T_DIR/show1.py"
	check "code run --out DIR writes plot-0001.png" bash -c \
		'[ "$(head -c 4 "$T_DIR/plots/plot-0001.png" | od -An -tx1 | tr -d " ")" = 89504e47 ]'

	run --clear-plots --json "$T_DIR/show1.py"
	check "session: one plt.show() gives one PNG" plots_ok 1
	run --json "$T_DIR/two.py"
	check "session: plots accumulate (1 + 2)" plots_ok 3
	run --json "$T_DIR/one.py"
	check "session: a run without plots still returns the earlier ones" plots_ok 3
	run --clear-plots --json "$T_DIR/one.py"
	check "session: --clear-plots forgets them" plots_ok 0
	run --stream "$T_DIR/show1.py"
	check "--stream: a plot event before the result" bash -c "printf '%s\n' \"\$OUT\" | python3 -c '
import json,sys
t=[json.loads(l)[\"type\"] for l in sys.stdin if l.strip()]
assert t[-1]==\"result\" and \"plot\" in t, t'"

	# code that picks a backend itself (model-written code's usual first
	# lines) still has its plots: show(), savefig, a figure left open
	printf 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n' | src agg.py
	printf 'import matplotlib.pyplot as plt\nplt.switch_backend("agg")\nplt.plot([1, 2, 3])\nplt.show()\nprint(plt.get_backend())\n' | src aggsw.py
	printf 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2])\nplt.savefig("a.png")\nplt.figure(); plt.plot([2, 1])\n' | src aggsave.py
	sc code run --lang python --json "$T_DIR/agg.py"
	check "code run: matplotlib.use(\"Agg\") then plt.show() gives one PNG" plots_ok 1
	sc code run --lang python --json "$T_DIR/aggsw.py"
	check "code run: plt.switch_backend(\"agg\") then plt.show() gives one PNG" plots_ok 1
	check "code run: ... and the backend is the one the code chose" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"]")" = agg ]'
	sc code run --lang python --json "$T_DIR/aggsave.py"
	check "code run: under Agg, a saved figure and one left open give two PNGs" plots_ok 2
	# a fresh interpreter (the runs above imported pyplot and sc_backend)
	run "$T_DIR/crash.py"
	run --clear-plots --json "$T_DIR/agg.py"
	check "session: matplotlib.use(\"Agg\") then plt.show() gives one PNG" plots_ok 1
	printf 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([3, 1])\n' | src aggopen.py
	run --clear-plots --json "$T_DIR/aggopen.py"
	check "session: under Agg, a figure left open at the end of a run is a plot" plots_ok 1

	# savefig then show(): both, as llm-sandbox (the saved file, the shown
	# figure drawn on since); saved and left open: once
	printf 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig("s.png")\nplt.plot([2, 1])\nplt.show()\n' | src saveshow.py
	two_differ() {
		plots_ok 2 && printf '%s' "$OUT" | python3 -c 'import json,sys
p=json.load(sys.stdin)["plots"]; assert p[0]["content_base64"]!=p[1]["content_base64"]'
	}
	export -f two_differ
	sc code run --lang python --json "$T_DIR/saveshow.py"
	check "code run: savefig then show() gives two PNGs, the second as shown" two_differ
	run --clear-plots --json "$T_DIR/saveshow.py"
	check "session: savefig then show() gives two PNGs" two_differ
else
	echo "skip - plots (the cell's /usr/bin/python3 has no matplotlib: apt-get install python3-matplotlib)"
fi

# --- plotly figures as HTML (when the cell's python3 has plotly) ---
# formats_are F1,F2,...: the plots' formats in order, HTML ones a full page
# that loads plotly.js, PNG ones with the magic bytes
formats_are() {
	printf '%s' "$OUT" | python3 -c 'import json,sys,base64
d=json.load(sys.stdin); want=sys.argv[1].split(",") if sys.argv[1] else []
got=[p["format"] for p in d["plots"]]
assert got==want, (got, want)
for p in d["plots"]:
    b=base64.b64decode(p["content_base64"])
    if p["format"]=="png": assert b[:8]==b"\x89PNG\r\n\x1a\n"
    else: assert b.lstrip().startswith(b"<") and b"plotly" in b and b"</html>" in b, b[:200]' "$1"
}
export -f formats_are
if /usr/bin/python3 -c 'import plotly' 2>/dev/null; then
	printf 'import plotly.graph_objects as go\ngo.Figure(go.Scatter(y=[1, 3, 2])).show()\nprint("shown")\n' | src ply1.py
	sc code run --lang python --json "$T_DIR/ply1.py"
	check "code run: one plotly fig.show() gives one HTML plot" formats_are html
	check "code run: ... and the program's output" bash -c '[ "$(jget "d[\"run_result\"][\"stdout\"]")" = shown ]'
	if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
		printf 'import matplotlib.pyplot as plt\nimport plotly.graph_objects as go\nplt.plot([1, 2]); plt.show()\ngo.Figure(go.Bar(y=[2, 1])).show()\nplt.plot([2, 1]); plt.show()\n' | src mixed.py
		sc code run --lang python --json "$T_DIR/mixed.py"
		check "code run: matplotlib and plotly plots come back in the order made" formats_are png,html,png
	fi
	mkdir -p "$T_DIR/plyout" && chmod 777 "$T_DIR/plyout"
	sc code run --lang python --out "$T_DIR/plyout" "$T_DIR/ply1.py"
	check "code run --out DIR writes plot-0001.html" grep -q '</html>' "$T_DIR/plyout/plot-0001.html"
	run --clear-plots --json "$T_DIR/ply1.py"
	check "session: a plotly figure is a plot" formats_are html
	run --json "$T_DIR/ply1.py"
	check "session: plotly plots accumulate" formats_are html,html
	run --stream --clear-plots "$T_DIR/ply1.py"
	check "--stream: the plot event says html" bash -c "printf '%s\n' \"\$OUT\" | python3 -c '
import json,sys
e=[json.loads(l) for l in sys.stdin if l.strip()]
assert [x[\"format\"] for x in e if x[\"type\"]==\"plot\"]==[\"html\"], e'"
else
	echo "skip - plotly (the cell's /usr/bin/python3 has no plotly: apt-get install python3-plotly)"
fi

# --- the API's /code against hostile cells (code_hostile_fixture.py) ---
cp "$(dirname "$0")/code_hostile_fixture.py" "$T_DIR/"
chmod 644 "$T_DIR/code_hostile_fixture.py"
API="$T_WORK/api.sock"
as_user_exec "$SC_BIN" serve --listen "unix:$API" --pool 2 >/dev/null 2>"$T_WORK/serve.err" &
SERVE=$!
for _ in $(seq 600); do [ -S "$API" ] && break; sleep 0.1; done
OUT=$(timeout 900 python3 "$T_DIR/code_hostile_fixture.py" "$API" 2>&1)
RC=$? ERR=$(tail -c 600 "$T_WORK/serve.err")
printf '%s\n' "$OUT" | grep -E '^(ok|FAIL) ' | sed 's/^/     /'
check "/code: hostile cells hold up no other cell, and no session takes their answers" expect_rc 0
# the pool's workers made those cells: once deleted, none is left a zombie
# (a worker reaped its cells' inits only when its next message came)
zombie_free() {
	local w
	for w in $(pgrep -P "$SERVE"); do
		ps -o stat= --ppid "$w" | grep -q Z && return 1
	done
	return 0
}
for _ in $(seq 300); do zombie_free && break; sleep 0.1; done
RC=0 ERR= OUT=$(for w in $(pgrep -P "$SERVE"); do ps -o pid=,stat=,cmd= --ppid "$w"; done)
check "after DELETE the pool's workers leave no zombie (within 30 s)" zombie_free
kill "$SERVE" 2>/dev/null
wait "$SERVE" 2>/dev/null
SERVE=

# --- rm ---
sc create "plain$$"
sc code session rm "plain$$"
check "session rm refuses a cell that is not a session" bash -c '[ $RC -eq 125 ] && grep -q "not a code session" <<<"$ERR"'
sc rm -f "plain$$"
sc code session rm "$S"
check "session rm: rc 0" expect_rc 0
sc code session ls
check "session ls no longer lists it" bash -c '! grep -q "^$S" <<<"$OUT"'
run "$T_DIR/one.py"
check "running in a removed session gives 125" expect_rc 125

finish
