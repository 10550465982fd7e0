#!/usr/bin/env bash
# sandcell batch report: runs made with the scripted model, some of them
# hostile (markup and a script in an answer, an SVG with an onload handler and
# a file named like a tag among the output files, a 5 MB observation and a
# 5 MB output file), turned into reports that headless Chromium opens: one
# table row per attempt, the charts drawn, nothing from the content run, no
# request leaving the page, the CSP blocking what an injected tag would do,
# sizes bounded, comparison of a sandbox and a vanilla run, shards merged,
# and side pages (--split). A screenshot is kept under the build directory.
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	echo "# SKIP: chromium is not installed (scripts/packages.txt lists it; setup.sh installs it)"
	exit 77
fi
BROWSER_PY="$SRCDIR/tests/integration/report_browser.py"
ART="$(dirname "$SANDCELL")/test-artifacts"
mkdir -p "$ART"

W=$T_WORK
# the rules, with the hostile texts, written by Python (no shell quoting)
python3 - "$W/rules.json" <<'PY'
import base64, json, struct, sys, zlib
def png(w, h):
    rows = b"".join(b"\0" + b"".join(bytes((x * 255 // w, y * 255 // h, 160)) for x in range(w)) for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
hostile = "<script>alert(1)</script><img src=x onerror=\"window.__pwned='answer';document.title='PWNED'\">"
svg = ("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"60\" height=\"40\" "
       "onload=\"window.__pwned='svg';document.title='PWNED';alert('svg')\">"
       "<script>window.__pwned='svg-script'</script>"
       "<image href=\"http://127.0.0.1:9/svg-leak.png\" width=\"10\" height=\"10\"/>"
       "<rect width=\"60\" height=\"40\" fill=\"#c33\"/></svg>")
b64 = base64.b64encode(png(48, 32)).decode()
def editor(path, text):
    return {"tool_calls": [{"name": "str_replace_editor", "arguments": {"command": "create", "path": path, "file_text": text}}]}
def bash(cmd):
    return {"tool_calls": [{"name": "execute_bash", "arguments": {"command": cmd}}]}
submit = {"tool_calls": [{"name": "submit", "arguments": {}}]}
rules = [
    {"match": "VANILLA say <<(.*?)>>", "responses": [{"content": "Reasoning done. \\boxed{{{1}}}"}]},
    {"match": "HOSTILE", "responses": [dict(editor("/testbed/answer.txt", hostile), content="I will answer <b>boldly</b> </script><script>window.__pwned='thought'</script>"), submit]},
    {"match": "SVGFILE", "responses": [
        editor("/testbed/output/evil.svg", svg),
        editor("/testbed/output/<img src=x onerror=alert(2)>.txt", "a file named like a tag\n"),
        bash("printf '%s' '" + b64 + "' | base64 -d > /testbed/output/plot.png && echo plotted > /testbed/answer.txt"),
        submit]},
    {"match": "BIG", "responses": [
        bash("head -c 5000000 /dev/zero | tr '\\0' y > /testbed/output/big.txt; head -c 5000000 /dev/zero | tr '\\0' x"),
        editor("/testbed/answer.txt", "big"), submit]},
    {"match": "say <<(.*?)>>", "responses": [
        {"content": "Let me look around first.", "tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo working in $(pwd)"}}]},
        editor("/testbed/answer.txt", "{{1}}"), submit]},
]
json.dump({"rules": rules}, open(sys.argv[1], "w"))
PY
cat >"$W/tasks.jsonl" <<'JSONL'
{"id": "p1", "problem": "say <<Paris>>", "answer": "Paris"}
{"id": "p2", "problem": "say <<Lyon>>", "answer": "Paris"}
{"id": "p3", "problem": "say <<42>>", "answer": 42, "scorer": "numeric"}
{"id": "h1", "problem": "HOSTILE", "answer": "<script>alert(1)</script>"}
{"id": "s1", "problem": "SVGFILE", "answer": "plotted"}
{"id": "b1", "problem": "BIG", "answer": "big"}
JSONL
cat >"$W/vanilla.jsonl" <<'JSONL'
{"id": "p1", "problem": "VANILLA say <<Paris>>", "answer": "Paris", "scorer": "boxed"}
{"id": "p2", "problem": "VANILLA say <<Paris>>", "answer": "Paris", "scorer": "boxed"}
{"id": "p3", "problem": "VANILLA say <<42>>", "answer": "42", "scorer": "boxed"}
JSONL
printf '%s\n' '{"id": "q1", "problem": "say <<more>>", "answer": "more"}' >"$W/more.jsonl"
give_to_user

start_conv "$W/rules.json"
RUN=$W/run
sc batch "$W/tasks.jsonl" --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 --out "$RUN" -q
check "a 6-task batch with hostile content runs" expect_rc 0
rtrue "every attempt submitted, the hostile answer kept" "$RUN" \
	"len(res) == 6 and all(r['status'] == 'submitted' for r in res) and '<script>' in by[('h1',0)]['answer']"
check "the SVG, the tag-named file, the PNG and the 5 MB file are among the output files" \
	test -s "$RUN/attempts/s1/0/files/evil.svg" -a -s "$RUN/attempts/s1/0/files/<img src=x onerror=alert(2)>.txt" \
	-a -s "$RUN/attempts/s1/0/files/plot.png" -a "$(stat -c %s "$RUN/attempts/b1/0/files/big.txt" 2>/dev/null)" = 5000000
# The agent caps what it keeps of an observation (16000 characters); a
# trajectory from elsewhere need not: make b1's first observation 5 MB.
python3 - "$RUN/attempts/b1/0/trajectory.json" <<'PY'
import json, sys
p = sys.argv[1]
t = json.load(open(p))
t["steps"][0]["observation"] = "Exit code: 0\n[stdout]\n" + "x" * 5000000 + "\nTHE-END-OF-IT"
json.dump(t, open(p, "w"))
PY
# Links out of the attempt's files and in place of its answer: named, never followed.
printf 'TOP-SECRET-42\n' >"$W/secret.txt"
chmod 644 "$W/secret.txt"
ln -s "$W/secret.txt" "$RUN/attempts/s1/0/files/leak.txt"
ln -s "$W" "$RUN/attempts/s1/0/files/leakdir"
rm -f "$RUN/attempts/p2/0/answer.txt"
ln -s "$W/secret.txt" "$RUN/attempts/p2/0/answer.txt"
give_to_user
sc batch "$W/vanilla.jsonl" --mode vanilla --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 --out "$W/van" -q
check "a vanilla run of the same task ids runs" expect_rc 0
sc batch "$W/more.jsonl" --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 --out "$W/more" -q
check "a run of one more task runs" expect_rc 0

# i of the attempt ID in a report's index (its sc-index block)
attempt_i() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="sc-index">(.*?)</script>', html, re.S)
idx = json.loads(m.group(1))
print([i for i, a in enumerate(idx["attempts"]) if a["id"] == sys.argv[2]][0])
PY
}
# browse NAME URL [ARGS]: open URL, the result in $W/NAME.json
browse() {
	local name=$1 url=$2
	shift 2
	timeout 300 /usr/bin/python3 "$BROWSER_PY" "$CHROMIUM" "$url" "$W/$name.json" "$@" 2>"$W/$name.err"
}
# seen NAME DESCRIPTION EXPR: EXPR over s (the page's state), requests,
# blocked, dialogs, console, exceptions of browse NAME
seen() {
	local r
	r=$(PAGE=${PAGE:-} python3 - "$W/$1.json" "$3" <<'PY' 2>&1
import json, os, sys
PAGE = os.environ["PAGE"]
d = json.load(open(sys.argv[1]))
s = d["state"]
requests, blocked, dialogs, console, exceptions = d["requests"], d["blocked"], d["dialogs"], d["console"], d["exceptions"]
print(bool(eval(sys.argv[2])))
PY
)
	if [ "$r" = True ]; then pass "$2"; else
		fail "$2"
		echo "       expression: $3 -> $r"
		{ head -c 3000 "$W/$1.json"; echo; head -c 1000 "$W/$1.err"; } 2>/dev/null | sed 's/^/       /'
	fi
}
# The page's own requests only: the report itself (no http, no other file).
LOCAL_ONLY='all(u.startswith("data:") or (u.startswith("file://") and u.split("#")[0].endswith(PAGE)) for u in requests)'
NO_SCRIPT_RAN='s["pwned"] is None and s["title"] != "PWNED" and not dialogs and not exceptions and s["elements_with_handlers"] == 0'

# ---- one run ----
R=$W/report.html
sc batch report "$RUN" -o "$R" --json
check "batch report exits 0" expect_rc 0
check "--json says what was written" bash -c 'printf "%s" "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"attempts\"] == 6 and d[\"runs\"] == 1 and d[\"side_files\"] == 0 and d[\"cut\"] >= 2, d"'
check "the report is bounded: 10 MB of content make less than 1.5 MB" test "$(stat -c %s "$R")" -lt 1500000
check "no markup from the content is in the page as markup" bash -c "! grep -q '<script>alert\|<img src=x\|<svg' '$R'"
check "the page holds only its own script elements: 6 details, the index, the script" \
	test "$(grep -o '<script' "$R" | wc -l)" -eq 8
check "no symlink of the attempts was followed" bash -c "! grep -q 'TOP-SECRET-42' '$R'"
check "the links are listed as links" bash -c "grep -q '\"name\":\"leak.txt\",\"size\":[0-9]*,\"kind\":\"symlink\"' '$R' && grep -q '\"name\":\"leakdir\",\"size\":[0-9]*,\"kind\":\"symlink\"' '$R'"
check "the page sets a CSP that forbids inline handlers and network access" \
	grep -q "content=\"default-src 'none'; script-src 'nonce-[0-9a-f]*'; style-src 'nonce-[0-9a-f]*'; img-src data:;" "$R"

PAGE=/report.html
browse index "file://$R" --screenshot "$W/report.png" --width 1280 --height 1500
check "Chromium opens the report" test -s "$W/index.json"
seen index "the page's script drew the report" 's["ready"] == "ready" and s["title"] == "sandcell batch report"'
seen index "the table has one row per attempt" 's["rows"] == 6 and sorted(s["row_ids"]) == ["b1", "h1", "p1", "p2", "p3", "s1"]'
seen index "the charts are there, each with marks" \
	'["score", "steps", "wall", "tokens", "latency"] == s["charts"] and all(n > 0 for n in s["chart_marks"])'
seen index "the header shows the run" 's["runs"] == 1'
seen index "no script from the content ran" "$NO_SCRIPT_RAN"
seen index "no request left the page" "$LOCAL_ONLY"
check "the screenshot was taken" bash -c "test \$(stat -c %s '$W/report.png') -gt 10000 && head -c 8 '$W/report.png' | od -An -c | grep -q 'P   N   G'"
cp "$W/report.png" "$ART/t_batch_report.$SANDCELL_TEST_AS.png" 2>/dev/null

H=$(attempt_i "$R" h1)
browse hostile "file://$R#a-$H"
seen hostile "the hostile attempt's episode is shown" 's["episode_shown"] and s["episode_steps"] == 2'
seen hostile "its answer and thought are shown as text" \
	'"<script>alert(1)</script><img src=x onerror=" in s["episode_text"] and "</script><script>window.__pwned" in s["episode_text"]'
seen hostile "and none of it ran" "$NO_SCRIPT_RAN"
seen hostile "no request left the page" "$LOCAL_ONLY"

S=$(attempt_i "$R" s1)
browse svg "file://$R#a-$S" --screenshot "$W/svg.png"
seen svg "the PNG is shown inline and decodes" \
	'any(i["alt"] == "plot.png" and i["kind"].startswith("data:image/png") and i["w"] == 48 for i in s["images"])'
seen svg "the SVG is shown as an image" 'any(i["alt"] == "evil.svg" and i["kind"].startswith("data:image/svg+xml") for i in s["images"])'
seen svg "the tag-named file is listed by its name, as text" '"<img src=x onerror=alert(2)>.txt" in s["episode_text"]'
seen svg "neither the SVG's onload nor its script ran" "$NO_SCRIPT_RAN"
seen svg "the SVG's external image was not fetched" "$LOCAL_ONLY"
cp "$W/svg.png" "$ART/t_batch_report.$SANDCELL_TEST_AS.svg.png" 2>/dev/null

B=$(attempt_i "$R" b1)
browse big "file://$R#a-$B"
seen big "the 5 MB observation is cut with a note" \
	'"cut by the report" in s["episode_text"] and "THE-END-OF-IT" not in s["episode_text"] and s["body_len"] < 400000'
seen big "the 5 MB file is cut with a note" '"big.txt" in s["episode_text"] and "contents (cut by the report)" in s["episode_text"]'

# The CSP itself: tags injected into the page (as if escaping had failed)
# may neither fetch nor run.
sed 's|<div id="app"></div>|&<img src="http://127.0.0.1:9/leak.png" onerror="window.__pwned=1;document.title=\x27PWNED\x27"><script>window.__pwned=2</script><link rel="stylesheet" href="http://127.0.0.1:9/x.css">|' "$R" >"$W/injected.html"
check "the injected copy holds the tags" grep -q 'leak.png' "$W/injected.html"
PAGE=/injected.html
browse injected "file://$W/injected.html"
seen injected "the page still draws itself" 's["ready"] == "ready" and s["rows"] == 6'
seen injected "the CSP stops an injected inline script and handler" 's["pwned"] is None and s["title"] != "PWNED"'
seen injected "the CSP stops the injected requests" \
	'all(u.startswith("file://") or any(b["reason"] == "csp" for b in blocked) for u in requests) and not any("leak" in c and "Refused" not in c and "Content Security Policy" not in c for c in console)'

# ---- compared, merged ----
C=$W/compare.html
sc batch report "$RUN" "$W/van" "$W/more" -o "$C" --json
check "a report of a sandbox run, a vanilla run and one more sandbox run" expect_rc 0
check "the sandbox runs are merged, the vanilla one compared: 2 runs, 10 attempts" \
	bash -c 'printf "%s" "$OUT" | grep -q "\"runs\":2,\"attempts\":10,"'
PAGE=/compare.html
browse compare "file://$C"
seen compare "two runs in the header, one row per attempt" 's["runs"] == 2 and s["rows"] == 10'
seen compare "the per-task side by side and the difference are drawn" \
	'"compare" in s["charts"] and "difference" in s["charts"]'
seen compare "the difference in mean score over the shared tasks is given" \
	'"3 tasks both runs scored" in s["compare"] and "0.6667" in s["compare"] and "1.0000" in s["compare"] and "+0.3333" in s["compare"]'
seen compare "no script from the content ran, no request left" "$NO_SCRIPT_RAN and $LOCAL_ONLY"

# ---- side pages ----
SP=$W/split.html
sc batch report "$RUN" -o "$SP" --split --json
check "--split puts every attempt's details in split.files/" \
	bash -c 'printf "%s" "$OUT" | grep -q "\"side_files\":6," && test "$(ls "'"$W"'/split.files" | wc -l)" -eq 6'
check "the index page then holds no details" test "$(grep -o '<script' "$SP" | wc -l)" -eq 2
PAGE=/split.html
browse split "file://$SP"
seen split "the rows link to the side pages" 's["rows"] == 6 and all(l.startswith("split.files/") and l.endswith(".html") for l in s["row_links"])'
HS=$(printf '%06d' "$(attempt_i "$SP" h1)")
PAGE=/$HS.html
browse side "file://$W/split.files/$HS.html"
seen side "a side page shows its episode" 's["ready"] == "ready" and s["episode_shown"] and "<script>alert(1)</script>" in s["episode_text"]'
seen side "and runs nothing from it, loads nothing" "$NO_SCRIPT_RAN and $LOCAL_ONLY"
sc batch report "$RUN" -o "$W/small.html" --inline-limit 1 --max-observation 100 --json
check "--inline-limit 1: every attempt gets a side page" bash -c 'printf "%s" "$OUT" | grep -q "\"side_files\":6,"'
sc batch report "$RUN" -o "$SP"
check "a report without --split removes the old side pages" test ! -e "$W/split.files"

# ---- errors ----
sc batch report
check "no directory: exit 125" expect_rc 125
check "  with a one-line error" err_one_line
sc batch report "$W/nonexistent"
check "a missing directory: exit 125" expect_rc 125
check "  with a one-line error naming it" bash -c 'printf "%s" "$ERR" | grep -q "nonexistent is not a batch directory"'
sc batch report --help
check "--help lists the limits" out_has '--max-observation'

stop_conv
finish
