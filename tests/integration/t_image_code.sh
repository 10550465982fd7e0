#!/usr/bin/env bash
# ctest-timeout: 1800
# The `code` image (scripts/images/code.sh) and `sandcell code` in it: a
# hello for every language of the table, matplotlib and ggplot2 plots as
# PNG, numpy and pandas importable with no network, and a python session.
# Building the image takes ~10 min and ~610 MB of downloads on a 2-core
# machine (9:47 measured), so a machine without the cached image builds it
# only when SANDCELL_TEST_CODE_IMAGE=1 or CI=true; otherwise the test skips.
# The built image is kept in the test cache keyed by the recipe (like
# image_cache.sh's minimal tar), so a rerun on the same machine is fast.
# Root only: the build and the cached root are root's.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/image_cache.sh"

[ "$SANDCELL_TEST_AS" = root ] || { echo "skip: the code image is built and cached by root"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "skip: mmdebstrap is not installed"; exit 77; }

code_key() {
	{
		cat "$SRCDIR/scripts/images/code.sh" "$SRCDIR/scripts/images/lib.sh" "$SRCDIR"/scripts/images/jest/*
		cat "$SRCDIR"/rootfs/*.[ch] "$SRCDIR"/common/*.[ch]
		mmdebstrap --version 2>/dev/null
	} | sha256sum | cut -c1-16
}
KEY=$(code_key)
CROOT="$IMG_CACHE/code-$KEY"
mkdir -p "$IMG_CACHE"
if [ ! -s "$CROOT/data/images/code.json" ]; then
	if [ "${SANDCELL_TEST_CODE_IMAGE:-}" != 1 ] && [ "${CI:-}" != true ]; then
		echo "skip: the code image is not cached; SANDCELL_TEST_CODE_IMAGE=1 builds it (~10 min)"
		exit 77
	fi
	(
		flock 9
		[ -s "$CROOT/data/images/code.json" ] && exit 0
		rm -rf "$CROOT.tmp"
		mkdir -p "$CROOT.tmp"
		start=$(date +%s)
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root SANDCELL_ROOT="$CROOT.tmp" \
			SANDCELL_APT_CACHE="$IMG_CACHE/apt-code" \
			SANDCELL_RECIPES="$SRCDIR/scripts/images" "$SC_BIN" image build code >&2 || exit 1
		echo "# code image built in $(($(date +%s) - start)) s" >&2
		rm -rf "$CROOT.tmp/run"
		mv "$CROOT.tmp" "$CROOT"
		# Keep only the current recipe's image.
		find "$IMG_CACHE" -maxdepth 1 -name 'code-*' ! -name "code-$KEY" -exec rm -rf {} +
	) 9>"$IMG_CACHE/.lock-code"
	check "image build code succeeds" test -s "$CROOT/data/images/code.json"
	[ -s "$CROOT/data/images/code.json" ] || { finish; exit; }
fi
# The image's manifest and layers, into this test's root: hard links where
# the cache is on the same file system (layers are read-only lower layers).
mkdir -p "$SANDCELL_ROOT"
cp -al "$CROOT/data" "$SANDCELL_ROOT/" 2>/dev/null || {
	rm -rf "$SANDCELL_ROOT/data"
	cp -a "$CROOT/data" "$SANDCELL_ROOT/"
}

sc image ls
check "the code image is listed" out_has code

S="$T_WORK/src"
mkdir -p "$S"
src() { local f="$S/$1"; shift; printf '%s\n' "$@" >"$f"; chmod 644 "$f"; echo "$f"; }
hello() {
	local lang=$1 f
	shift
	f=$(src "hello-$lang" "$@")
	sc code run --image code --lang "$lang" "$f"
	check "$lang: hello runs in the code image" bash -c '[ '$RC' -eq 0 ] && [ "$0" = "hello '"$lang"' 42" ]' "$OUT"
	[ "$OUT" = "hello $lang 42" ] || printf '%s\n%s\n' "$OUT" "$ERR" | tail -5
}
hello python 'print("hello python", 6 * 7)'
hello javascript 'console.log("hello javascript", 6 * 7)'
hello typescript 'const n: number = 6 * 7; console.log("hello typescript", n);'
hello java 'public class Main { public static void main(String[] a) { System.out.println("hello java " + 6 * 7); } }'
hello cpp '#include <iostream>' 'int main() { std::cout << "hello cpp " << 6 * 7 << std::endl; }'
hello c '#include <stdio.h>' 'int main(void) { printf("hello c %d\n", 6 * 7); return 0; }'
hello go 'package main' 'import "fmt"' 'func main() { fmt.Println("hello go", 6*7) }'
hello rust 'fn main() { println!("hello rust {}", 6 * 7); }'
hello r 'cat(sprintf("hello r %d\n", 6L * 7L))'
hello ruby 'puts "hello ruby #{6 * 7}"'
hello bash 'echo "hello bash $((6 * 7))"'

# jest, from npm by the recipe: a TypeScript test file's verdict
f=$(src good.test.ts "import { expect, test } from '@jest/globals';" \
	"test('adds', () => { const n: number = 6 * 7; expect(n).toBe(42); });")
sc code run --image code --lang jest --json "$f"
check "jest: a passing TypeScript test file is Success in the code image" bash -c \
	'[ "$(jget "d[\"status\"]")" = Success ]'
f=$(src bad.test.ts "test('brokenSum', () => { expect(1 + 1).toBe(3); });")
sc code run --image code --lang jest --json "$f"
check "jest: a failing test is Failed and named" bash -c \
	'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stderr\"]" | grep -q brokenSum'

png_magic() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }
mkdir -p "$T_WORK/out" && chmod 777 "$T_WORK/out"
f=$(src plot.py 'import matplotlib.pyplot as plt' 'plt.plot([1, 2, 3], [1, 4, 9])' 'plt.show()')
sc code run --image code --lang python --out "$T_WORK/out/py" "$f"
check "python: a matplotlib figure comes back as a PNG" bash -c '[ '$RC' -eq 0 ] && [ -f "$0/plot-0001.png" ]' "$T_WORK/out/py"
check "whose bytes start with the PNG magic" png_magic "$T_WORK/out/py/plot-0001.png"
f=$(src plot.R 'library(ggplot2)' 'p <- ggplot(data.frame(x = 1:3, y = c(1, 4, 9)), aes(x, y)) + geom_point()' 'print(p)')
sc code run --image code --lang r --out "$T_WORK/out/r" "$f"
check "r: a ggplot2 plot comes back as a PNG" bash -c '[ '$RC' -eq 0 ] && [ -f "$0/plot-0001.png" ]' "$T_WORK/out/r"
check "whose bytes start with the PNG magic" png_magic "$T_WORK/out/r/plot-0001.png"

# numpy and pandas are in the image: --libraries finds them importable and
# installs nothing, which it could not have done with --net none (default).
f=$(src np.py 'import numpy, pandas' 'print(int(numpy.arange(10).sum()), len(pandas.DataFrame({"a": [1, 2, 3]})))')
sc code run --image code --net none --lang python --libraries numpy,pandas --json "$f"
check "numpy and pandas: --libraries with no network succeeds (nothing to install)" \
	bash -c '[ '$RC' -eq 0 ] && [ "$(printf "%s" "$0" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"run_result\"][\"stdout\"], end=\"\")")" = "45 3" ]' "$OUT"
f=$(src req.py 'print(1)')
sc code run --image code --net none --lang python --libraries surely-not-a-package-sc --json "$f"
check "while a missing library with no network is refused" bash -c '[ '$RC' -ne 0 ] && grep -q "no network" <<<"$0"' "$ERR$OUT"

# A python session in the code image: it has IPython, so the session runs
# in IPython's InteractiveShell (the stdlib driver is tested on the host).
sess() { local f; f=$(src "sess-$RANDOM" "$1"); shift; sc code session run ci "$@" "$f"; }
sc code session start --image code ci
check "a session starts in the code image" expect_rc 0
sess 'import math; r = 2'
sess 'math.pi * r ** 2'
check "state persists and a bare last expression is shown as Out[N]" out_is "Out[2]: 12.566370614359172"
sess '1 / 0'
check "an exception exits 1 with its traceback" bash -c '[ '$RC' -eq 1 ] && grep -q ZeroDivisionError <<<"$0"' "$ERR"
sess 'while True: pass' --timeout 2
check "a timeout interrupts the code (124)" expect_rc 124
sess 'r'
check "and the session goes on with its state" out_is "Out[5]: 2"
sess 'import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()' --out "$T_WORK/out/sess"
check "a session's matplotlib figure comes back as a PNG" png_magic "$T_WORK/out/sess/plot-0001.png"
sess 'import os; os.kill(os.getpid(), 9)'
check "an interpreter crash is reported" bash -c '[ '$RC' -ne 0 ] && grep -q "state is lost" <<<"$0"' "$ERR"
sess 'print("r" in globals())'
check "and the restarted interpreter starts from an empty state" out_is "False"
sess 'type(get_ipython()).__name__'
check "the session is IPython's InteractiveShell" out_has "InteractiveShell"
sess '%timeit -n1 -r1 pass'
check "IPython's magics work" bash -c '[ '$RC' -eq 0 ] && grep -q "per loop" <<<"$0"' "$OUT"
sc code session rm ci
check "the session is removed" expect_rc 0

finish
