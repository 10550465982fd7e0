#!/usr/bin/env bash
# Fuzz what takes hostile input, with libFuzzer (clang, ASan+UBSan): each
# target in tests/fuzz/fuzz_*.c runs for FUZZ_SECONDS (default 18; about
# three minutes for all of them) on a copy of its seed corpus
# (tests/fuzz/corpus_<target>/, written by tests/fuzz/make_corpus.py from the
# tests' own inputs). FUZZ_TARGETS="llm tar" runs only those. Fails on any
# crash, leak or sanitizer report; the input that triggered it is kept as
# tests/fuzz/crash-* / leak-* (ignored by git) and can be replayed with:
#   build-fuzz/tests/fuzz_<target> FILE
# Targets that write (tar, copy) do so only in a private directory under a
# temporary TMPDIR, removed afterwards.
#
# The run is seeded (FUZZ_SEED, default 1), so the suite tries the same
# inputs in the same order every time and a pass does not turn into a
# failure by luck; a slower machine only gets less far down the same
# sequence. To hunt for new bugs, fuzz longer with fresh seeds:
#   FUZZ_SEED=0 FUZZ_SECONDS=600 scripts/fuzz.sh     (0: libFuzzer picks one)
# and add what it finds to tests/fuzz/make_corpus.py as a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-18}
seed=${FUZZ_SEED:-1}
jobs=$(nproc)

targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
	read -r -a targets <<<"$FUZZ_TARGETS"
else
	for src in tests/fuzz/fuzz_*.c; do
		t=${src#tests/fuzz/fuzz_}
		targets+=("${t%.c}")
	done
fi

echo "== configure build-fuzz (clang, SANDCELL_FUZZ=ON)" >&2
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DSANDCELL_FUZZ=ON -DSANDCELL_WERROR=ON >/dev/null
build_targets=()
for t in "${targets[@]}"; do
	build_targets+=(--target "fuzz_$t")
done
cmake --build build-fuzz "${build_targets[@]}" -j"$jobs" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

failed=()
for t in "${targets[@]}"; do
	bin=build-fuzz/tests/fuzz_$t
	mkdir -p "$work/$t/tmp"
	cp -r "tests/fuzz/corpus_$t" "$work/$t/corpus"
	dict=()
	[ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
	echo "== fuzz_$t for ${seconds}s" >&2
	rc=0
	TMPDIR="$work/$t/tmp" "$bin" -seed="$seed" -max_total_time="$seconds" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 "${dict[@]}" \
		-artifact_prefix=tests/fuzz/ "$work/$t/corpus" 2>"$work/$t/log" || rc=$?
	# libFuzzer exits non-zero on findings; a sanitizer report without an
	# exit (it should not happen with the options above) counts too.
	if [ "$rc" -ne 0 ] ||
		grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$work/$t/log"; then
		tail -n 60 "$work/$t/log" >&2
		echo "fuzz_$t: FAILED (see the input saved under tests/fuzz/)" >&2
		failed+=("$t")
		continue
	fi
	# a target must leave nothing behind in its TMPDIR
	if [ -n "$(ls -A "$work/$t/tmp")" ]; then
		ls -la "$work/$t/tmp" >&2
		echo "fuzz_$t: FAILED (left files in its TMPDIR)" >&2
		failed+=("$t")
		continue
	fi
	grep -E "^stat::number_of_executed_units" "$work/$t/log" >&2 || true
	echo "fuzz_$t: ok" >&2
done
if [ "${#failed[@]}" -ne 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	exit 1
fi
echo "fuzz: ok (${#targets[@]} targets)" >&2
