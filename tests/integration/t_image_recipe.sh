#!/usr/bin/env bash
# sandcell image build with recipes of our own (no mmdebstrap): the recipe
# contract (SANDCELL_OUT, SANDCELL_CONFIG, a clean environment), failures
# that leave nothing behind, and a recipe whose archive is hostile.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: busybox-static is not installed"; exit 77; }
RC_DIR="$T_DIR/recipes"
mkdir -p "$RC_DIR" "$T_DIR/tree/bin"
cp "$SRCDIR"/scripts/images/*.sh "$RC_DIR/"
cp /bin/busybox "$T_DIR/tree/bin/busybox"
for t in sh cat ls pwd echo test; do ln -s busybox "$T_DIR/tree/bin/$t"; done
DATA="$SANDCELL_ROOT/data"
export T_EXTRA_ENV="SANDCELL_RECIPES=$RC_DIR SECRET_TOKEN=do-not-leak"

cat >"$RC_DIR/tiny.sh" <<EOF
# A recipe: busybox as the whole root filesystem.
. "\$SANDCELL_RECIPE_DIR/lib.sh"
[ -z "\${SECRET_TOKEN:-}" ] || { echo "recipe: the caller's environment leaked" >&2; exit 9; }
[ -p "\$SANDCELL_OUT" ] || { echo "recipe: SANDCELL_OUT is not a FIFO" >&2; exit 8; }
sc_env GREETING=hello-from-recipe
sc_env PATH=/bin
sc_workdir /data/work
sc_cmd /bin/sh -l
echo "recipe: writing the tree" >&2
tar -C "$T_DIR/tree" -cf "\$SANDCELL_OUT" .
EOF
cat >"$RC_DIR/fails.sh" <<EOF
echo "recipe: half an archive, then a failure" >&2
tar -C "$T_DIR/tree" -cf - . | head -c 20000 >"\$SANDCELL_OUT"
exit 3
EOF
cat >"$RC_DIR/early.sh" <<'EOF'
echo "recipe: giving up at once" >&2
exit 7
EOF
cat >"$RC_DIR/hostile.sh" <<'EOF'
# An archive with an absolute path in it.
tar -C / -cPf "$SANDCELL_OUT" /etc/hostname
EOF
cat >"$RC_DIR/lingers.sh" <<EOF
# Leaves a background process behind that holds the output open.
sleep 300.$$ &
tar -C "$T_DIR/tree" -cf "\$SANDCELL_OUT" .
EOF
chmod -R a+rX "$T_DIR/recipes" "$T_DIR/tree"

sc image build tiny
check "a recipe of our own builds an image" bash -c '[ '$RC' -eq 0 ] && grep -q "built image '"'tiny'"'" <<<"$0"' "$ERR"
check "the recipe's output goes to stderr" err_has "recipe: writing the tree"
check "stdout stays empty" out_is ""
sc run --image tiny -- sh -c 'echo $GREETING; pwd; ls /bin | head -3'
check "the recipe's env and workdir (created) are the image's defaults" \
	out_is "$(printf 'hello-from-recipe\n/data/work\nbusybox\ncat\necho')"
sc image ls --json
check "the recipe's cmd and source are recorded" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
i=[x for x in json.load(sys.stdin) if x[\"name\"]==\"tiny\"][0]
assert i[\"cmd\"]==[\"/bin/sh\",\"-l\"], i
assert i[\"source\"].startswith(\"build:\") and i[\"source\"].endswith(\"/tiny.sh\"), i
"' "$OUT"

sc image build tiny --recipe "$RC_DIR/tiny.sh"
check "rebuilding with --recipe replaces the image" expect_rc 0
sc run --image tiny -- test -x /bin/busybox
check "the rebuilt image runs" expect_rc 0

sc image build broken --recipe "$RC_DIR/fails.sh"
check "a failing recipe fails the build with its status" bash -c '[ '$RC' -ne 0 ] && grep -q "status 3" <<<"$0"' "$ERR"
sc image build broken --recipe "$RC_DIR/early.sh"
check "a recipe that writes nothing fails with its status" bash -c '[ '$RC' -ne 0 ] && grep -q "status 7" <<<"$0"' "$ERR"
sc image build broken --recipe "$RC_DIR/hostile.sh"
check "a recipe's hostile archive is refused" bash -c '[ '$RC' -ne 0 ] && grep -q "absolute path" <<<"$0"' "$ERR"
sc image ls
check "failed builds leave no image" bash -c '! grep -q "^broken " <<<"$0"' "$OUT"
check "failed builds leave no work files and no layers" \
	bash -c '[ -z "$(ls -A '"$DATA"'/tmp)" ] && [ "$(ls '"$DATA"'/layers | wc -l)" -eq 1 ]'

sc image build lingers --recipe "$RC_DIR/lingers.sh"
check "a recipe that leaves a process holding its output still finishes" expect_rc 0
for _ in $(seq 600); do no_process_with "sleep 300.$$" && break; sleep 0.1; done
check "what the recipe left running is stopped" no_process_with "sleep 300.$$"

# SIGKILL of sandcell mid-build: what the recipe runs (as mmdebstrap would
# be) dies with it, though the recipe's shell is not its parent.
printf '%s\n' "sh -c 'sleep 4848.$$; :' &" "sleep 4849.$$" >"$RC_DIR/slow.sh"
chmod a+r "$RC_DIR/slow.sh"
both_running() { has_process_with "sleep 4849.$$" && has_process_with "sleep 4848.$$"; }
as_user_exec "$SC_BIN" image build slow --recipe "$RC_DIR/slow.sh" </dev/null >/dev/null 2>&1 &
builder=$!
for _ in $(seq 600); do both_running && break; sleep 0.1; done
check "the slow recipe's processes were running" both_running
kill -KILL "$builder"
wait "$builder" 2>/dev/null
for _ in $(seq 600); do no_process_with "sleep 484[89].$$" && break; sleep 0.1; done
check "after SIGKILL of sandcell image build, nothing the recipe started runs on" \
	no_process_with "sleep 484[89].$$"
pkill -KILL -f "sleep 484[89].$$" 2>/dev/null || true

sc image build nosuch
check "an unknown recipe is a one-line error" bash -c '[ '$RC' -eq 125 ] && [ "$(grep -c . <<<"$0")" -eq 1 ] && grep -q "recipe" <<<"$0"' "$ERR"
sc image build host
check "an image may not be called host" expect_rc 125
sc image build
check "build without a name is a usage error" expect_rc 125

sc image rm tiny lingers
check "the recipe-built images are removed" bash -c '[ '$RC' -eq 0 ] && [ -z "$(ls -A '"$DATA"'/layers)" ]'

finish
