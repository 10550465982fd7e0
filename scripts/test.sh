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

# Longer suites, each a script of its own.
for extra in scripts/fuzz.sh scripts/vm-test.sh; do
	if [ -x "$extra" ]; then
		echo "== $extra" >&2
		"$extra"
	fi
done
