#!/usr/bin/env bash
# The whole test suite: setup, a -Werror build and ctest, then the same suite
# under ASan+UBSan, then the longer suites (fuzzing, the cgroup v2 VM).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh

echo "== build (-Werror) and test" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSANDCELL_WERROR=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build with ASan+UBSan and test" >&2
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSANDCELL_WERROR=ON -DSANDCELL_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs")

# clang's UBSan checks what gcc's does not (a float converted to an integer
# that cannot hold it, e.g. a reply's "prompt_tokens": 1e300): the unit tests
# and a few fast integration tests again, built with clang.
echo "== build with clang ASan+UBSan and test (unit, run, agent, batch)" >&2
cmake -S . -B build-asan-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DSANDCELL_WERROR=ON -DSANDCELL_SANITIZE=ON >/dev/null
cmake --build build-asan-clang -j"$jobs" >/dev/null
(cd build-asan-clang && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure -j"$jobs" -R '^unit\.|^integration\.t_(run|agent|agent_errors|batch)\.')

# Longer suites, each a script of its own.
for extra in scripts/fuzz.sh scripts/vm-test.sh; do
	if [ -x "$extra" ]; then
		echo "== $extra" >&2
		"$extra"
	fi
done
