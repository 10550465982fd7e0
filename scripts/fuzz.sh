#!/usr/bin/env bash
# Fuzz the policy loader with libFuzzer for FUZZ_SECONDS (default 60) on a
# copy of the seed corpus. Fails on any crash, leak or sanitizer report; the
# input that triggered it is kept as tests/fuzz/crash-* / leak-* (ignored by
# git) and can be replayed with: build-fuzz/tests/fuzz_policy FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
jobs=$(nproc)

echo "== configure build-fuzz (clang, SANDCELL_FUZZ=ON)" >&2
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DSANDCELL_FUZZ=ON -DSANDCELL_WERROR=ON >/dev/null
cmake --build build-fuzz --target fuzz_policy -j"$jobs" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r tests/fuzz/corpus_policy "$work/corpus"

echo "== fuzz_policy for ${seconds}s" >&2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if ! build-fuzz/tests/fuzz_policy -max_total_time="$seconds" -timeout=10 \
	-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	-dict=tests/fuzz/policy.dict -artifact_prefix=tests/fuzz/ \
	"$work/corpus" 2>"$work/log"; then
	tail -n 60 "$work/log" >&2
	echo "fuzz_policy: FAILED (see the input saved under tests/fuzz/)" >&2
	exit 1
fi
# libFuzzer exits non-zero on findings; a sanitizer report without an exit
# (it should not happen with the options above) still counts as a failure.
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$work/log"; then
	tail -n 60 "$work/log" >&2
	echo "fuzz_policy: FAILED (sanitizer report)" >&2
	exit 1
fi
grep -E "^stat::number_of_executed_units|^Done" "$work/log" >&2 || true
echo "fuzz_policy: ok" >&2
