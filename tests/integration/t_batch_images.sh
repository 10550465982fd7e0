#!/usr/bin/env bash
# ctest-timeout: 300
# Per-task images in sandcell batch, and the image store's cap: tasks
# naming stored images and a registry reference (pulled once, however many
# tasks need it, from Debian's docker-registry on loopback), a missing image
# and a failed pull that fail only their tasks; then --store-max evicting
# the least recently used image while an older one in use by a long-lived
# cell stays.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/batch_lib.sh"

for tool in docker-registry skopeo curl; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed (scripts/setup.sh)"; exit 77; }
done
[ -x /bin/busybox ] || { echo "skip: busybox-static is not installed"; exit 77; }
TOOL="$SRCDIR/tests/integration/image_tool.py"
W=$T_WORK
R="$T_DIR/registry"
mkdir -p "$R" "$W/img"
DATA="$SANDCELL_ROOT/data"

# A busybox root with /etc/which saying MARKER and 1 MB of its own
# padding, as an OCI layout in $W/img/NAME.
make_image() { # NAME MARKER
	local d="$W/img/$1.root"
	mkdir -p "$d/bin" "$d/etc" "$d/testbed"
	cp /bin/busybox "$d/bin/busybox"
	for t in sh cat echo ls sleep mkdir test env true; do ln -sf busybox "$d/bin/$t"; done
	# the agent's execute_bash runs `bash -c`: busybox's sh stands in
	printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"$d/bin/bash" && chmod 755 "$d/bin/bash"
	printf '%s\n' "$2" >"$d/etc/which"
	head -c 1000000 /dev/urandom >"$d/pad"
	python3 "$TOOL" pack-rootfs "$d" "$W/img/$1.tar" 0 &&
		python3 "$TOOL" oci-from-tar "$W/img/$1.tar" "$W/img/$1" PATH=/bin IMG_MARK="$2"
}
for n in alpha beta gamma delta; do make_image "$n" "marker-$n" || { echo "FAIL - make image $n"; exit 1; }; done
chmod -R a+rX "$W"

REG_PID=""
stop_all() {
	[ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null
	stop_conv
	as_user "$SC_BIN" rm -f keeper >/dev/null 2>&1
	wait 2>/dev/null
	t_cleanup
}
trap stop_all EXIT
for _ in 1 2 3; do
	PORT=$(free_port)
	cat >"$R/config.yml" <<YML
version: 0.1
log:
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $R/storage
http:
  addr: 127.0.0.1:$PORT
YML
	docker-registry serve "$R/config.yml" >"$R/registry.log" 2>&1 &
	REG_PID=$!
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v2/" && break; sleep 0.1; done
	curl -s -o /dev/null "http://127.0.0.1:$PORT/v2/" && break
	kill "$REG_PID" 2>/dev/null; wait "$REG_PID" 2>/dev/null; REG_PID=""
done
[ -n "$REG_PID" ] || { echo "FAIL - the test registry did not start: $(tail -3 "$R/registry.log")"; exit 1; }
push() { # OCI_DIR REPO:TAG
	skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$1:latest" \
		"docker://127.0.0.1:$PORT/$2" >"$R/push.log" 2>&1
}
check "skopeo pushes an image to the loopback registry" push "$W/img/gamma" test/gamma:1
REF="127.0.0.1:$PORT/test/gamma:1"

sc image import "$W/img/alpha" img-alpha
check "image alpha is imported" expect_rc 0
sc image import "$W/img/beta" img-beta
check "image beta is imported" expect_rc 0

# --- a batch whose tasks name their images ---
cat >"$W/rules.json" <<'JSON'
{"rules": [
 {"match": "WHICH (\\S+)", "responses": [
   {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cat /etc/which > /testbed/answer.txt"}}]},
   {"tool_calls": [{"name": "submit", "arguments": {}}]}]}
]}
JSON
cat >"$W/tasks.jsonl" <<JSONL
{"id": "a1", "problem": "WHICH a1", "answer": "marker-alpha", "image": "img-alpha"}
{"id": "b1", "problem": "WHICH b1", "answer": "marker-beta", "image": "img-beta"}
{"id": "g1", "problem": "WHICH g1", "answer": "marker-gamma", "image": "$REF"}
{"id": "g2", "problem": "WHICH g2", "answer": "marker-gamma", "image": "$REF"}
{"id": "g3", "problem": "WHICH g3", "answer": "marker-gamma", "image": "$REF"}
{"id": "nostore", "problem": "WHICH n", "answer": "x", "image": "no-such-image"}
{"id": "nopull", "problem": "WHICH p", "answer": "x", "image": "127.0.0.1:$PORT/test/absent:1"}
JSONL
give_to_user
start_conv "$W/rules.json"
batch() { # OUT TASKS [OPTIONS...]
	local out=$1 tasks=$2
	shift 2
	sc batch "$tasks" --base-url "$FAKE_URL" --model fake-model --retry-base-ms 10 \
		--out "$out" --concurrency 4 --pull-insecure "$@"
}
: >"$R/registry.log.mark"
batch "$W/run1" "$W/tasks.jsonl"
check "a batch with per-task images ends with errors for the two bad images (exit 1)" expect_rc 1
rtrue "every task has a result" "$W/run1" "len(res) == 7"
rtrue "the tasks on stored images ran in their images" "$W/run1" \
	"by[('a1',0)]['score'] == 1 and by[('b1',0)]['score'] == 1" || rq "$W/run1" "[by[('a1',0)], by[('b1',0)]]"
rtrue "the three tasks on the registry reference ran in the pulled image" "$W/run1" \
	"all(by[(i,0)]['score'] == 1 and by[(i,0)]['status'] == 'submitted' for i in ('g1','g2','g3'))"
rtrue "results record each task's image and the stored image it ran on" "$W/run1" \
	"by[('a1',0)]['image'] == 'img-alpha' and by[('a1',0)]['store_image'] == 'img-alpha' and by[('g1',0)]['image'] == '$REF' and by[('g1',0)]['store_image'].startswith('127.0.0.1_${PORT}_gamma_1-') and '_gamma_1-' in by[('g1',0)]['store_image']"
check "the reference was pulled once (sandcell says so once)" \
	bash -c '[ "$(grep -c "pulling '"$REF"'" <<<"$0")" -eq 1 ]' "$ERR"
check "the registry served the reference's manifest once" \
	bash -c '[ "$(grep -c "GET /v2/test/gamma/manifests/1 " "'"$R"'/registry.log")" -eq 1 ]'
rtrue "a task naming an image that is not stored fails alone, saying so" "$W/run1" \
	"by[('nostore',0)]['status'] == 'error' and \"image 'no-such-image' not found\" in by[('nostore',0)]['error']"
rtrue "a failed pull fails its task with the registry's answer" "$W/run1" \
	"by[('nopull',0)]['status'] == 'error' and 'pulling image' in by[('nopull',0)]['error'] and 'not found' in by[('nopull',0)]['error']"
STORED=$(rq "$W/run1" "by[('g1',0)]['store_image']")
sc image ls --json
check "the pulled image is in the store under its store name, with its source" \
	bash -c 'grep -q "\"name\":\"'"$STORED"'\"" <<<"$0" && grep -q "pull:127.0.0.1:'"$PORT"'/test/gamma:1@sha256:" <<<"$0"' "$OUT"

# --pull never: a reference not stored fails its task alone; a stored one
# is used as it is (no new pull)
check "skopeo pushes a second image" push "$W/img/delta" test/delta:1
cat >"$W/tasks2.jsonl" <<JSONL
{"id": "d1", "problem": "WHICH d1", "answer": "marker-delta", "image": "127.0.0.1:$PORT/test/delta:1"}
{"id": "g4", "problem": "WHICH g4", "answer": "marker-gamma", "image": "$REF"}
{"id": "h1", "problem": "WHICH h1", "answer": "marker-alpha", "image": "img-alpha"}
JSONL
give_to_user
batch "$W/run2" "$W/tasks2.jsonl" --pull never
check "--pull never: the batch goes on past the missing image (exit 1)" expect_rc 1
rtrue "--pull never: the unpulled reference fails with a clear error" "$W/run2" \
	"by[('d1',0)]['status'] == 'error' and '--pull never' in by[('d1',0)]['error'] and 'sandcell image pull' in by[('d1',0)]['error']"
rtrue "--pull never: the other tasks ran, the stored reference as it was" "$W/run2" \
	"by[('g4',0)]['score'] == 1 and by[('h1',0)]['score'] == 1"
check "--pull never pulled nothing" bash -c '! grep -q "GET /v2/test/delta/manifests" "'"$R"'/registry.log"'
stop_conv

# --- the store's cap: least recently used first, never an image in use ---
sc create --image img-alpha keeper
check "a long-lived cell uses image alpha (used first: the least recent)" expect_rc 0
sleep 0.5
sc run --image "$STORED" -- true
check "a cell ran on the pulled image" expect_rc 0
sleep 0.5
sc run --image img-beta -- true
check "a cell ran on image beta (the most recent)" expect_rc 0
sleep 2.5 # images opened in the last 2 s count as in use
sc image ls --json
CAP=$(jget 'sum(i["size"] for i in d if i["name"] in ("img-alpha", "img-beta")) * 7 // 4')
sc image import --store-max "$CAP" "$W/img/delta" img-delta
check "an import over the cap succeeds" expect_rc 0
check "the eviction is logged with the image's name" err_has "evicted image '$STORED'"
check "only the least recently used image nobody uses was evicted" \
	bash -c '[ "$(grep -c "evicted image" <<<"$0")" -eq 1 ]' "$ERR"
sc image ls --json
check "alpha (older, but in use by a cell), beta and the new image remain" \
	bash -c '[ "$(jget "sorted(i[\"name\"] for i in d)")" = "[\"img-alpha\", \"img-beta\", \"img-delta\"]" ]'
sc run --image img-alpha -- cat /etc/which
check "the image in use still runs" out_is marker-alpha
sc run --image "$STORED" -- true
check "the evicted image is gone" bash -c '[ '$RC' -ne 0 ] && grep -q "not found" <<<"$0"' "$ERR"
sc rm -f keeper
check "the long-lived cell is removed" expect_rc 0

finish
