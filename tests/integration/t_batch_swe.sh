#!/usr/bin/env bash
# sandcell batch --swe: SWE-bench-shaped rows, each in its image (a small
# Python repository with a bug, committed into an image here), the model's
# patch taken from the episode's cell as patch.diff, and the verdict of
# the task's tests in a fresh cell: resolved only when every FAIL_TO_PASS
# test passes and every PASS_TO_PASS test still does (pytest's -rA
# summary), as SWE-bench's harness scores it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

command -v git >/dev/null || { echo "skip: git is not installed"; exit 77; }
/usr/bin/python3 -c 'import pytest' 2>/dev/null || { echo "skip: python3-pytest is not installed"; exit 77; }
W=$T_WORK
TOOL="$SRCDIR/tests/integration/image_tool.py"

# --- the task image: a repository at /testbed (add() is wrong, mul() is
# right), committed; the host's /usr bound in for python3, pytest and git ---
IMG="$T_DIR/img/root"
mkdir -p "$IMG"/usr "$IMG"/etc "$IMG"/tmp "$IMG"/root "$IMG"/testbed/tests
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$IMG/$l"; done
echo 'root:x:0:0::/root:/bin/sh' >"$IMG/etc/passwd"
printf 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n' >"$IMG/testbed/calc.py"
printf 'from calc import mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n' >"$IMG/testbed/tests/test_calc.py"
: >"$IMG/testbed/tests/__init__.py"
printf '[pytest]\npythonpath = .\n' >"$IMG/testbed/pytest.ini"
BASE=$(cd "$IMG/testbed" && git init -q && git add -A &&
	git -c user.name=t -c user.email=t@example.com commit -qm base && git rev-parse HEAD)
python3 "$TOOL" pack-rootfs "$IMG" "$T_DIR/img/swe.tar" 0 &&
	python3 "$TOOL" oci-from-tar "$T_DIR/img/swe.tar" "$T_DIR/img/oci" PATH=/usr/bin:/bin ||
	{ echo "FAIL - cannot make the task image"; exit 1; }
chmod -R a+rX "$T_DIR/img"
sc image import "$T_DIR/img/oci" swe-repo
check "the task image imports" expect_rc 0
CELL_OPTS=(-v /usr:/usr:ro)

# The test patch adds tests/test_add.py (FAIL_TO_PASS: fails on the bug).
TEST_PATCH='diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
'
python3 - "$W/swe.jsonl" "$BASE" "$TEST_PATCH" <<'PY'
import json, sys
out, base, patch = sys.argv[1:4]
rows = []
for iid, what in [("demo__calc-1", "SWEFIX"), ("demo__calc-2", "SWENOTHING"), ("demo__calc-3", "SWEBREAK"),
                  ("demo__calc-4", "SWECHEAT")]:
    rows.append({
        "instance_id": iid, "repo": "demo/calc", "base_commit": base,
        "problem_statement": f"{what} {iid}: add(2, 3) should be 5",
        "test_patch": patch,
        # as SWE-bench publishes them: JSON lists inside strings
        "FAIL_TO_PASS": json.dumps(["tests/test_add.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul"]),
        "patch": "the gold patch stays out of results",
    })
with open(out, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
cat >"$W/rules.json" <<'JSON'
{"rules": [
 {"match": "SWEFIX", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cd /testbed && sed -i 's/a - b/a + b/' calc.py && echo 'notes' > NOTES.md"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "SWENOTHING", "responses": [
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "SWEBREAK", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cd /testbed && sed -i 's/a - b/a + b/; s/a \\* b/a + b/' calc.py"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]},
 {"match": "SWECHEAT", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cd /testbed && printf 'def test_add():\\n    pass\\n' > tests/test_add.py"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
give_to_user
start_conv "$W/rules.json"
sc batch --swe "$W/swe.jsonl" --swe-image swe-repo --base-url "$FAKE_URL" --model fake-model \
	--retry-base-ms 10 --out "$W/run" --concurrency 2 "${CELL_OPTS[@]}"
check "the SWE batch runs to the end (exit 0; stderr: $(printf '%s' "$ERR" | tail -3))" expect_rc 0
rtrue "every row has a result scored by the swe scorer" "$W/run" \
	"len(res) == 4 and all(r['scorer'] == 'swe' and r['status'] == 'submitted' for r in res)" ||
	rq "$W/run" "res"
rtrue "the fixed task is resolved: FAIL_TO_PASS flipped, PASS_TO_PASS kept" "$W/run" \
	"by[('demo__calc-1',0)]['score'] == 1 and by[('demo__calc-1',0)]['tests']['FAIL_TO_PASS']['success'] == ['tests/test_add.py::test_add'] and by[('demo__calc-1',0)]['tests']['PASS_TO_PASS']['failed'] == 0" ||
	rq "$W/run" "by[('demo__calc-1',0)]"
rtrue "the untouched task is not resolved: its FAIL_TO_PASS test still fails" "$W/run" \
	"by[('demo__calc-2',0)]['score'] == 0 and by[('demo__calc-2',0)]['tests']['FAIL_TO_PASS']['failure'] == ['tests/test_add.py::test_add']"
rtrue "the task that broke mul() is not resolved: PASS_TO_PASS failed" "$W/run" \
	"by[('demo__calc-3',0)]['score'] == 0 and by[('demo__calc-3',0)]['tests']['PASS_TO_PASS']['failure'] == ['tests/test_calc.py::test_mul'] and by[('demo__calc-3',0)]['tests']['FAIL_TO_PASS']['passed'] == 1"
rtrue "a test file the model wrote itself is replaced by the test patch's: not resolved" "$W/run" \
	"by[('demo__calc-4',0)]['score'] == 0 and by[('demo__calc-4',0)]['tests']['FAIL_TO_PASS']['failure'] == ['tests/test_add.py::test_add']"
P1="$W/run/attempts/demo__calc-1/0"
check "patch.diff holds the model's change and its new file" \
	bash -c 'grep -q "^+    return a + b" "$0/patch.diff" && grep -q "^+++ b/NOTES.md" "$0/patch.diff"' "$P1"
check "the untouched task's patch is empty" bash -c '[ ! -s "$0/patch.diff" ]' "$W/run/attempts/demo__calc-2/0"
check "report.json and eval.log are kept per attempt" \
	bash -c 'python3 -c "import json,sys; assert json.load(open(sys.argv[1]))[\"resolved\"] is True" "$0/report.json" && grep -q "PASSED tests/test_add.py::test_add" "$0/eval.log"' "$P1"
rtrue "results keep the row's repo and base commit, not its gold patch" "$W/run" \
	"by[('demo__calc-1',0)]['metadata']['repo'] == 'demo/calc' and 'patch' not in by[('demo__calc-1',0)] and 'test_patch' not in by[('demo__calc-1',0)]"

sc batch export --format predictions -o "$W/preds.jsonl" "$W/run"
check "export --format predictions writes one line per attempt" \
	bash -c '[ '$RC' -eq 0 ] && [ "$(wc -l <"$0")" -eq 4 ]' "$W/preds.jsonl"
check "each prediction is SWE-bench's shape: the instance, the model, the patch" \
	python3 -c 'import json,sys
p = {r["instance_id"]: r for r in map(json.loads, open(sys.argv[1]))}
assert p["demo__calc-1"]["model_name_or_path"] == "fake-model", p
assert "+    return a + b" in p["demo__calc-1"]["model_patch"]
assert p["demo__calc-2"]["model_patch"] == ""' "$W/preds.jsonl"

# --- a bad row is reported and skipped; a row without test ids needs eval_script ---
printf '%s\n' '{"instance_id": "x", "problem_statement": "p"}' \
	'{"instance_id": "y", "problem_statement": "p", "test_patch": "", "FAIL_TO_PASS": ["Test (mod.Case)"]}' >"$W/bad.jsonl"
sc batch --swe "$W/bad.jsonl" --swe-image swe-repo --base-url "$FAKE_URL" --model fake-model --out "$W/bad"
check "rows without test_patch or with non-pytest ids are refused, each saying why" \
	bash -c 'grep -q "no \"test_patch\"" <<<"$0" && grep -q "give an \"eval_script\"" <<<"$0"' "$ERR"

# --- eval_script and no test ids: its exit status decides ---
python3 - "$W/eval.jsonl" "$BASE" <<'PY'
import json, sys
out, base = sys.argv[1:3]
row = {"instance_id": "demo__calc-9", "base_commit": base, "problem_statement": "SWEFIX eval",
       "test_patch": "", "eval_script": "cd /testbed && python3 -c 'import calc; assert calc.add(2, 3) == 5'"}
open(out, "w").write(json.dumps(row) + "\n")
PY
give_to_user
sc batch --swe "$W/eval.jsonl" --swe-image swe-repo --base-url "$FAKE_URL" --model fake-model \
	--retry-base-ms 10 --out "$W/run-eval" "${CELL_OPTS[@]}"
check "a row with an eval_script runs" expect_rc 0
rtrue "its exit status resolves it" "$W/run-eval" "by[('demo__calc-9',0)]['score'] == 1" || rq "$W/run-eval" "res"

sc batch --swe "$W/swe.jsonl" --base-url "$FAKE_URL" --model fake-model --out "$W/noimg" --max-tasks 1 \
	--retry-base-ms 10
rtrue "without --swe-image a row runs in the default image, where /testbed is no repository: an error saying so" "$W/noimg" \
	"by[('demo__calc-1',0)]['score'] == 0 and by[('demo__calc-1',0)]['status'] == 'error' and 'git diff in /testbed failed' in by[('demo__calc-1',0)]['error']" || rq "$W/noimg" "res"
finish
