#!/usr/bin/env bash
# The docs' examples run: every shell block of README.md and docs/*.md that
# carries a `<!-- test: run ... -->` marker (doc_examples.py says how to
# write one) is run against this build, and its status must be the one the
# marker names; each chain of blocks in a fresh directory with its own
# SANDCELL_ROOT, leaving no cell behind. Prints how many shell blocks each
# file has marked and unmarked (those need an LLM, a remote host or a
# registry). Then every command's --help: exit 0, help on stdout, and the
# agent's help naming one default per limit, the one it applies.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

SRC=${SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export SRCDIR=$SRC

# sandcell on PATH is the build under test
mkdir -p "$T_DIR/bin"
ln -s "$SC_BIN" "$T_DIR/bin/sandcell"
chmod 755 "$T_DIR/bin"

# the scripted LLM server and its scenarios (fixture=llm), readable by
# the test user
cp -r "$SRC/tests/fakes" "$T_DIR/fakes"
chmod -R a+rX "$T_DIR/fakes"

CHAINS="$T_DIR/chains"
mkdir -p "$CHAINS"
LIST=$(cd "$SRC" && python3 "$SRC/tests/integration/doc_examples.py" "$CHAINS" README.md docs/*.md)
RC=$?
OUT=$LIST ERR=
check "the extractor reads every doc" expect_rc 0
printf '%s\n' "$LIST" | grep -v '^chain ' | sed 's/^/# /'
chmod -R a+rX "$CHAINS"

n_marked=$(printf '%s\n' "$LIST" | awk '$2 == "marked" {s += $3} END {print s + 0}')
OUT="$n_marked"
check "the docs have runnable examples ($n_marked marked)" test "$n_marked" -ge 20

while read -r word num who labels; do
	[ "$word" = chain ] || continue
	if [ "$who" = root ] && [ "$SANDCELL_TEST_AS" != root ]; then
		echo "# skipped as $SANDCELL_TEST_AS (root only): $labels"
		continue
	fi
	dir=$(mktemp -d "$T_DIR/doc.XXXXXX")
	chmod 755 "$dir"
	mkdir "$dir/home"
	[ "$SANDCELL_TEST_AS" = nobody ] && chown 65534:65534 "$dir/home"
	o=$(as_user env PATH="$T_DIR/bin:/usr/sbin:/usr/bin:/sbin:/bin" DOC_DIR="$dir/home" DOC_FAKES="$T_DIR/fakes" \
		SANDCELL_ROOT="$dir/home/.sandcell" bash "$CHAINS/chain-$num.sh" 2>&1 </dev/null)
	RC=$?
	printf '%s\n' "$o" | grep . | sed 's/^/#   /'
	OUT=$o ERR=
	check "$labels" expect_rc 0
	rm -rf "$dir"
done <<<"$LIST"

# --- every command's --help: exit 0, on stdout ---
help_ok() {
	sc "$@" --help
	[ "$RC" -eq 0 ] && [ -n "$OUT" ] && [ -z "$ERR" ]
}
for c in run create exec cp ps rm gc commit policy "policy show" "policy check" \
	image "image ls" "image build" "image import" "image pull" "image rm" \
	"code" "code languages" "code run" "code session" "code session start" \
	"code session run" "code session rm" "code session ls" \
	agent batch "batch summarize" "batch export" "batch report" serve mcp doctor version; do
	# shellcheck disable=SC2086
	check "sandcell $c --help exits 0 with help on stdout" help_ok $c
done

# the agent applies --memory 4G --pids 512 --disk 2G: its help says so,
# once each
sc agent --help
agent_defaults() {
	[ "$(printf '%s\n' "$OUT" | grep -c -- '^  --pids N .*default 512')" = 1 ] &&
		[ "$(printf '%s\n' "$OUT" | grep -c -- '^  --disk SIZE .*default 2G')" = 1 ] &&
		[ "$(printf '%s\n' "$OUT" | grep -c -- '^  --memory SIZE .*default 4G')" = 1 ] &&
		! out_has 'default 1024' && ! out_has 'default 1G)'
}
check "agent --help names the agent's defaults once (4G, 512, 2G)" agent_defaults

finish
