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
# Every test once under the sanitizers, as the unprivileged user (the harder
# path); the root variants where root takes code of its own (v1 cgroups, a
# host id range, shifted image layers). The -Werror pass above runs both
# variants of every test; this keeps the whole suite well under 45 minutes.
asan_root='t_(cgroup_v1|cells|image_idmap|user|run)\.root$'
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -E '\.root$')
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -R "$asan_root")

# clang's UBSan checks what gcc's does not (a float converted to an integer
# that cannot hold it, e.g. a reply's "prompt_tokens": 1e300): the unit tests
# and a few fast integration tests again, built with clang.
echo "== build with clang ASan+UBSan and test (unit, run, agent, batch)" >&2
cmake -S . -B build-asan-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DSANDCELL_WERROR=ON -DSANDCELL_SANITIZE=ON >/dev/null
cmake --build build-asan-clang -j"$jobs" >/dev/null
(cd build-asan-clang && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure -j"$jobs" -R '^unit\.|^integration\.t_(run|agent|agent_errors|batch)\.')

echo "== build with ThreadSanitizer and test (unit, batch, agent, cells)" >&2
# The library is called from many threads (batch, pool, the server): a TSan
# build runs the tests that use threads. Reports are written to files (see
# tests/tsan/options.c), so a race fails the suite even where a test ignores
# stderr or runs sandcell with a cleared environment.
tsan_dir=/tmp/sandcell-tsan
rm -rf "$tsan_dir"
mkdir -m 1777 "$tsan_dir"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSANDCELL_WERROR=ON -DSANDCELL_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs" >/dev/null
(cd build-tsan && ctest --output-on-failure -j"$jobs" -R '^unit\.|t_batch\.|t_batch_crash|t_agent\.|t_cells')
if compgen -G "$tsan_dir/*" >/dev/null; then
	echo "ThreadSanitizer reports:" >&2
	cat "$tsan_dir"/* >&2
	exit 1
fi

# Longer suites, each a script of its own.
for extra in scripts/fuzz.sh scripts/vm-test.sh; do
	if [ -x "$extra" ]; then
		echo "== $extra" >&2
		"$extra"
	fi
done
