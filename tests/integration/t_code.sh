#!/usr/bin/env bash
# sandcell code: languages table and one-shot runs with the host's toolchains.
. "$(dirname "$0")/../lib.sh"

src() { # src NAME: write stdin to $T_DIR/NAME, readable by the test user
	cat >"$T_DIR/$1"
	chmod 644 "$T_DIR/$1"
}
# jq-less JSON path: jget 'd["run_result"]["stdout"]'
have() { command -v "$1" >/dev/null 2>&1; }
skip_line() { echo "skip - $*"; }

# --- the table ---
sc code languages
check "languages lists python" out_has "^python "
check "languages lists the SandboxFusion alias nodejs" out_has "nodejs"
sc code languages --json
check "languages --json is a JSON list with 25 rows" bash -c \
	'printf "%s" "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d)==25 and all(\"available\" in x for x in d)"'
check "languages --json says which languages take --libraries" bash -c \
	'printf "%s" "$OUT" | python3 -c "import json,sys; d={x[\"name\"]:x[\"libraries\"] for x in json.load(sys.stdin)}; assert d[\"go\"] is True and d[\"r\"] is True and d[\"python\"] is True and d[\"bash\"] is False"'
if have bash; then
	check "languages --json says bash is available here" bash -c \
		'printf "%s" "$OUT" | python3 -c "import json,sys; d={x[\"name\"]:x for x in json.load(sys.stdin)}; assert d[\"bash\"][\"available\"] is True"'
fi

# versions: the image's Debian packages, read from its dpkg status
lang_field() { # LANG KEY: from $OUT (languages --json)
	printf '%s' "$OUT" | python3 -c 'import json,sys; print({x["name"]: x for x in json.load(sys.stdin)}[sys.argv[1]][sys.argv[2]])' "$1" "$2"
}
sc code languages --json
if want=$(dpkg-query -W -f='${Version}' python3 2>/dev/null) && [ -n "$want" ]; then
	check "languages --json gives the host's python3 package version" 		test "$(lang_field python version)" = "$want"
	check "languages names the package it read" test "$(lang_field python package)" = python3
fi
if [ -x /bin/busybox ]; then
	python3 "$SRCDIR/tests/integration/image_tool.py" dpkg "$T_DIR/dpkg.tar"
	mkdir -p "$T_DIR/hostvar/lib/dpkg"
	printf 'Package: python3\nStatus: install ok installed\nVersion: 66.6-hostile\n' \
		>"$T_DIR/hostvar/lib/dpkg/status"
	python3 "$SRCDIR/tests/integration/image_tool.py" dpkg "$T_DIR/dpkg-link.tar" "$T_DIR/hostvar"
	chmod a+rx "$T_DIR/hostvar" "$T_DIR/hostvar/lib" "$T_DIR/hostvar/lib/dpkg"
	chmod a+r "$T_DIR/dpkg.tar" "$T_DIR/dpkg-link.tar" "$T_DIR/hostvar/lib/dpkg/status"
	sc image import "$T_DIR/dpkg.tar" dpkgimg
	check "an image with a dpkg status imports" expect_rc 0
	sc code languages --json --image dpkgimg
	check "an image's versions come from its own dpkg status" \
		test "$(lang_field python version) $(lang_field perl version)" = "9.9.9-1 5.99-2"
	check "a package that is not installed has no version" test "$(lang_field ruby version)" = None
	sc code languages --image dpkgimg
	check "the table shows the upstream version" out_has "^python .* 9\.9\.9 "
	sc image import "$T_DIR/dpkg-link.tar" dpkglink
	check "an image whose /var is a link to the host imports" expect_rc 0
	sc code languages --json --image dpkglink
	check "the image's link to a host dpkg status is not followed" \
		test "$(lang_field python version)" = None
	sc image rm dpkgimg dpkglink
fi

# --- bad input ---
printf 'print(1)\n' | src p1.py
sc code run --lang cobol "$T_DIR/p1.py"
check "unknown language gives 125" expect_rc 125
check "unknown language is named in one line" bash -c \
	'[ "$(printf "%s\n" "$ERR" | grep -c .)" -eq 1 ] && grep -q "unknown language .cobol." <<<"$ERR"'
sc code run "$T_DIR/p1.py"
check "no --lang gives 125" expect_rc 125
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' '#' | src big.py
sc code run --lang python "$T_DIR/big.py"
check "a source over 4 MiB is refused with 125" expect_rc 125
check "the oversized source error says so" err_has "larger than the limit"

# --- a language whose tool is missing: SandboxError naming the tool and its
# package (SandboxFusion's answer), not the program's Failed with 127 ---
# a PATH without the tool: python3 is not found in the cell
sc code run --lang python -e PATH=/nonexistent --json "$T_DIR/p1.py"
check "a missing interpreter is a SandboxError, exit 125" bash -c \
	'[ "$(jget "d[\"status\"]")" = SandboxError ] && [ $RC -eq 125 ]'
check "... whose message names the tool and the Debian package" bash -c \
	'jget "d[\"message\"]" | grep -q "'"'"'python3'"'"' was not found in the cell.*apt-get install python3"'
sc code run --lang python -e PATH=/nonexistent "$T_DIR/p1.py"
check "... and without --json says so in one line on stderr" bash -c \
	'[ $RC -eq 125 ] && grep -q "apt-get install python3" <<<"$ERR"'
# a compiled language whose compiler the image lacks, as code languages says
sc code languages --json
absent=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(next((x["name"] for x in json.load(sys.stdin) if x["compiled"] and not x["available"]), ""))')
if [ -n "$absent" ]; then
	printf 'x\n' | src absent.src
	sc code run --lang "$absent" --json "$T_DIR/absent.src"
	check "$absent (its compiler is absent here): SandboxError naming the package" bash -c \
		'[ "$(jget "d[\"status\"]")" = SandboxError ] && [ $RC -eq 125 ] && jget "d[\"message\"]" | grep -q "was not found in the cell.*apt-get install "'
else
	skip_line "missing compiler (every compiled language is available here)"
fi
# a program that itself exits 127 is a program's failure
printf 'exit 127\n' | src exit127.sh
sc code run --lang bash --json "$T_DIR/exit127.sh"
check "a program exiting 127 is Failed (127), not SandboxError" bash -c \
	'[ "$(jget "d[\"status\"]")" = Failed ] && [ $RC -eq 127 ]'
printf 'echo "sandcell: cannot run '"'"'bash'"'"': No such file or directory" >&2; exit 127\n' | src fake127.sh
sc code run --lang bash --json "$T_DIR/fake127.sh"
check "... even one that prints the cell's not-found line first (it ran)" bash -c \
	'[ "$(jget "d[\"status\"]")" = Failed ] && [ $RC -eq 127 ]'

# --- libraries ---
sc code run --lang python --libraries surely-not-installed-xyz "$T_DIR/p1.py"
check "--libraries without network: 125" expect_rc 125
check "--libraries without network: says so and which hosts to allow" bash -c \
	'grep -q "no network" <<<"$ERR" && grep -q -- "--allow-net pypi.org" <<<"$ERR"'
sc code run --lang python --libraries json "$T_DIR/p1.py"
check "--libraries: an importable library is not installed (runs without network)" out_is 1
sc code run --lang python --libraries 'a;b' "$T_DIR/p1.py"
check "--libraries: a bad name is refused" expect_rc 125

# --- python ---
printf 'import sys\nprint("hello")\nprint("oops", file=sys.stderr)\n' | src hello.py
sc code run --lang python --json "$T_DIR/hello.py"
check "python hello: rc 0" expect_rc 0
check "python hello: status Success" bash -c '[ "$(jget "d[\"status\"]")" = Success ]'
check "python hello: stdout" bash -c '[ "$(jget "d[\"run_result\"][\"stdout\"]")" = hello ]'
check "python hello: stderr" bash -c '[ "$(jget "d[\"run_result\"][\"stderr\"]")" = oops ]'
check "python: compile_result is null" bash -c '[ "$(jget "d[\"compile_result\"]")" = null ]'
sc code run --lang python3 "$T_DIR/hello.py"
check "without --json the program's stdout is passed on" out_is hello
check "without --json the program's stderr is passed on" err_has oops

printf 'import sys\nsys.exit(7)\n' | src exit7.py
sc code run --lang python --json "$T_DIR/exit7.py"
check "python exit code 7: rc 7" expect_rc 7
check "python exit code 7: status Failed, return_code 7" bash -c \
	'[ "$(jget "d[\"status\"], d[\"run_result\"][\"return_code\"]")" = "[\"Failed\", 7]" ]'

printf 'print(int(input()) * 2)\n' | src double.py
printf '21\n' | src in.txt
sc code run --lang python --stdin "$T_DIR/in.txt" --json "$T_DIR/double.py"
check "--stdin reaches the program" bash -c '[ "$(jget "d[\"run_result\"][\"stdout\"]")" = 42 ]'

printf 'while True:\n    pass\n' | src spin.py
sc code run --lang python --run-timeout 1 --json "$T_DIR/spin.py"
check "a run timeout is TimeLimitExceeded" bash -c \
	'[ "$(jget "d[\"run_result\"][\"status\"]")" = TimeLimitExceeded ]'
check "a run timeout gives rc 124" expect_rc 124

printf 'import sys\nsys.stdout.buffer.write(b"a\\xffb\\n")\n' | src badutf8.py
sc code run --lang python --json "$T_DIR/badutf8.py"
check "invalid UTF-8 output is replaced and stays a string" bash -c \
	'[ "$(jget "d[\"run_result\"][\"stdout\"]")" = "$(printf "a\xef\xbf\xbdb")" ]'

printf 'open("out.txt","w").write("data")\n' | src writes.py
sc code run --lang python --fetch out.txt --json "$T_DIR/writes.py"
check "--fetch returns the file base64" bash -c '[ "$(jget "d[\"files\"][\"out.txt\"]")" = ZGF0YQ== ]'
printf 'import os\nos.makedirs("sub", exist_ok=True)\nopen("sub/o.txt","w").write("in-sub")\nopen("/tmp/t.txt","w").write("abs")\n' | src writes2.py
sc code run --lang python --fetch sub/o.txt --fetch /tmp/t.txt --out "$T_WORK/out" "$T_DIR/writes2.py"
check "--out writes the fetched files under their paths" bash -c \
	'[ "$(cat "$0/out/sub/o.txt")" = in-sub ] && [ "$(cat "$0/out/tmp/t.txt")" = abs ]' "$T_WORK"
check "--out names each file it wrote" err_has "wrote $T_WORK/out/sub/o.txt (6 bytes)"
sc code run --lang python --fetch sub/o.txt "$T_DIR/writes2.py"
check "--fetch with nowhere to put the files is refused" err_has "needs --out DIR"
sc code run --lang python --fetch missing.txt --json "$T_DIR/writes.py"
check "--fetch of a missing file is a SandboxError naming it" bash -c \
	'[ "$(jget "d[\"status\"]")" = SandboxError ] && jget "d[\"message\"]" | grep -q missing.txt'

mkdir -p "$T_DIR/files" && printf 'from-files\n' >"$T_DIR/files/data.txt" && chmod -R a+rX "$T_DIR/files"
printf 'print(open("data.txt").read().strip())\n' | src readfiles.py
sc code run --lang python --files "$T_DIR/files" "$T_DIR/readfiles.py"
check "--files copies a directory into the work directory" out_is from-files

# a memory limit: the program fails (killed, or its allocation refused
# where only rlimits are available); a kill is reported as "memory".
# Which one is true here: what holds --memory, as doctor --json says.
sc doctor --json
mem_mech=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"]["memory"])')
case "$mem_mech" in
cgroup-v1 | cgroup-v2) mem_hit=memory ;;
*) mem_hit=null ;;
esac
export mem_hit
printf '#include <stdlib.h>\n#include <string.h>\nint main(void){for(int i=0;i<64;i++){char*p=malloc(16<<20);if(!p)return 9;memset(p,1,16<<20);}return 0;}\n' | src hog.c
if have gcc; then
	sc code run --lang c --memory 64M --json "$T_DIR/hog.c"
	check "memory limit: the program does not succeed" bash -c \
		'[ "$(jget "d[\"run_result\"][\"status\"]")" = Finished ] && [ "$(jget "d[\"run_result\"][\"return_code\"]")" != 0 ]'
	check "memory limit ($mem_mech): limit_hit is $mem_hit" bash -c \
		'[ "$(jget "d[\"limit_hit\"]")" = "$mem_hit" ]'
else
	skip_line "memory limit (no gcc on this host)"
fi

# --- c / cpp ---
if have g++; then
	printf '#include <iostream>\nint main(){int x; std::cin>>x; std::cout<<x+1<<"\\n"; std::cerr<<"to-err\\n"; return 3;}\n' | src p.cpp
	sc code run --lang cpp --stdin "$T_DIR/in.txt" --json "$T_DIR/p.cpp"
	check "cpp: compiled (compile_result Finished, 0)" bash -c \
		'[ "$(jget "d[\"compile_result\"][\"status\"], d[\"compile_result\"][\"return_code\"]")" = "[\"Finished\", 0]" ]'
	check "cpp: stdin, stdout and exit code" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"], d[\"run_result\"][\"return_code\"]")" = "[\"22\\n\", 3]" ]'
	check "cpp: stderr" bash -c '[ "$(jget "d[\"run_result\"][\"stderr\"]")" = to-err ]'
	printf 'int main(){ return undeclared; }\n' | src bad.cpp
	sc code run --lang cpp --json "$T_DIR/bad.cpp"
	check "cpp compile error: run_result null, status Failed" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"]")" = "[\"Failed\", null]" ]'
	check "cpp compile error: the compiler's message" bash -c \
		'jget "d[\"compile_result\"][\"stderr\"]" | grep -q undeclared'
	check "cpp compile error: non-zero rc" bash -c '[ $RC -ne 0 ]'
	printf '#include <stdio.h>\nint main(void){puts("hello c");return 0;}\n' | src p.c
	sc code run --lang c "$T_DIR/p.c"
	check "c hello" out_is "hello c"
else
	skip_line "cpp and c (no g++ on this host)"
fi

# --- java ---
if have javac && have java; then
	printf 'public class Greeter {\n  public static void main(String[] a) {\n    System.out.println("hello java");\n    System.exit(5);\n  }\n}\n' | src Greeter.java
	sc code run --lang java --json "$T_DIR/Greeter.java"
	check "java: the class name is taken from the source" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"]")" = "hello java" ]'
	check "java: exit code" expect_rc 5
	printf 'public class Main { public static void main(String[] a) { int x = "s"; } }\n' | src Bad.java
	sc code run --lang java --json "$T_DIR/Bad.java"
	check "java compile error: run_result null" bash -c '[ "$(jget "d[\"run_result\"]")" = null ]'
	check "java compile error: javac's message" bash -c \
		'jget "d[\"compile_result\"][\"stderr\"]" | grep -q "incompatible types"'
else
	skip_line "java (no javac/java on this host)"
fi

# --- javascript, bash ---
if have node; then
	printf 'console.log("hello js"); console.error("js-err"); process.exit(2);\n' | src p.js
	sc code run --lang nodejs --json "$T_DIR/p.js"
	check "javascript (alias nodejs): stdout, stderr, exit code" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"], d[\"run_result\"][\"stderr\"], d[\"run_result\"][\"return_code\"]")" = "[\"hello js\\n\", \"js-err\\n\", 2]" ]'
else
	skip_line "javascript (no node on this host)"
fi
printf 'read x; echo "got $x"; exit 4\n' | src p.sh
sc code run --lang bash --stdin "$T_DIR/in.txt" "$T_DIR/p.sh"
check "bash: stdin and exit code" bash -c '[ "$OUT" = "got 21" ] && [ $RC -eq 4 ]'

# --- go, ruby, r: hello with stdin, stdout, stderr and exit code; a timeout;
# a memory limit (the program does not succeed) ---
# lang_basics LANG NAME: $T_DIR/NAME reads a number N, prints "hello LANG 2N",
# "LANG-err" on stderr and exits 3; NAME.spin loops; NAME.hog takes 1 GiB.
lang_basics() {
	local l=$1 f=$2
	sc code run --lang "$l" --stdin "$T_DIR/in.txt" --json "$T_DIR/$f"
	check "$l: stdin, stdout, stderr and exit code" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"], d[\"run_result\"][\"stderr\"], d[\"run_result\"][\"return_code\"]")" = "[\"hello $0 42\\n\", \"$0-err\\n\", 3]" ]' "$l"
	check "$l: status Failed (exit 3), rc 3" bash -c '[ "$(jget "d[\"status\"]")" = Failed ] && [ $RC -eq 3 ]'
	sc code run --lang "$l" --run-timeout 1 --json "$T_DIR/$f.spin"
	check "$l: a run timeout is TimeLimitExceeded, rc 124" bash -c \
		'[ "$(jget "d[\"run_result\"][\"status\"]")" = TimeLimitExceeded ] && [ $RC -eq 124 ]'
	sc code run --lang "$l" --memory 64M --json "$T_DIR/$f.hog"
	# (where the limit is only an address-space rlimit, Go's toolchain
	# cannot start under it: then the compile step is what fails)
	check "$l: memory limit: the program does not succeed" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "(d[\"run_result\"] or d[\"compile_result\"])[\"status\"]" | grep -qx Finished &&
		 [ "$(jget "(d[\"run_result\"] or d[\"compile_result\"])[\"return_code\"]")" != 0 ] &&
		 ! jget "(d[\"run_result\"] or {\"stdout\": \"\"})[\"stdout\"]" | grep -q "^survived"'
	check "$l: memory limit ($mem_mech): limit_hit is $mem_hit" bash -c \
		'[ "$(jget "d[\"limit_hit\"]")" = "$mem_hit" ]'
}

if have go; then
	src m.go <<'EOF'
package main

import (
	"fmt"
	"os"
)

func main() {
	var n int
	fmt.Scan(&n)
	fmt.Println("hello go", n*2)
	fmt.Fprintln(os.Stderr, "go-err")
	os.Exit(3)
}
EOF
	printf 'package main\n\nfunc main() {\n\tfor {\n\t}\n}\n' | src m.go.spin
	src m.go.hog <<'EOF'
package main

import "fmt"

func main() {
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 16<<20)
		for j := range b {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("survived", len(keep))
}
EOF
	lang_basics go m.go
	sc code run --lang golang --json "$T_DIR/m.go"
	check "go (alias golang): compiled offline (compile_result Finished, 0)" bash -c \
		'[ "$(jget "d[\"compile_result\"][\"status\"], d[\"compile_result\"][\"return_code\"]")" = "[\"Finished\", 0]" ]'
	printf 'package main\n\nfunc main() { var x int = "s"; _ = x }\n' | src bad.go
	sc code run --lang go --json "$T_DIR/bad.go"
	check "go compile error: run_result null, status Failed" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"]")" = "[\"Failed\", null]" ]'
	check "go compile error: the compiler's message" bash -c \
		'jget "d[\"compile_result\"][\"stderr\"]" | grep -q "cannot use"'
	printf 'package main\n\nimport "example.com/notthere"\n\nfunc main() { notthere.F() }\n' | src net.go
	sc code run --lang go --json "$T_DIR/net.go"
	check "go: an import that is not in the cell fails to build (offline, no hang)" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"], d[\"compile_result\"][\"status\"]")" = "[\"Failed\", null, \"Finished\"]" ]'
else
	skip_line "go (no go on this host)"
fi

if have ruby; then
	printf 'n = STDIN.gets.to_i\nputs "hello ruby #{n * 2}"\nSTDERR.puts "ruby-err"\nexit 3\n' | src m.rb
	printf 'loop { }\n' | src m.rb.spin
	printf 'a = []\n64.times { a << ("x" * (16 << 20)) }\nputs "survived #{a.size}"\n' | src m.rb.hog
	lang_basics ruby m.rb
	printf 'def f(\n' | src bad.rb
	sc code run --lang rb --json "$T_DIR/bad.rb"
	check "ruby (alias rb): a syntax error fails with the message" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stderr\"]" | grep -qi "syntax"'
else
	skip_line "ruby (no ruby on this host)"
fi

# plots_ok N: the JSON result has N plots, each a PNG (its magic bytes)
plots_ok() {
	printf '%s' "$OUT" | python3 -c 'import json,sys,base64
d=json.load(sys.stdin); n=int(sys.argv[1]); p=d["plots"]
assert len(p)==n, (len(p), n)
assert all(x["format"]=="png" and base64.b64decode(x["content_base64"])[:8]==b"\x89PNG\r\n\x1a\n" for x in p)' "$1"
}
export -f plots_ok
if have Rscript; then
	printf 'n <- as.integer(readLines(file("stdin"), n = 1))\nwriteLines(paste("hello r", n * 2))\nmessage("r-err")\nquit(status = 3)\n' | src m.R
	printf 'repeat {}\n' | src m.R.spin
	printf 'a <- list()\nfor (i in 1:64) a[[i]] <- runif(2e6)\ncat("survived", length(a), "\\n")\n' | src m.R.hog
	lang_basics r m.R
	printf 'plot(1:10)\nhist(c(1, 2, 2, 3, 3, 3))\ncat("drawn\\n")\n' | src plot.R
	sc code run --lang R --json "$T_DIR/plot.R"
	check "r (alias R): two base-graphics plots give two PNGs" plots_ok 2
	check "r plots: the program's output is there too" bash -c '[ "$(jget "d[\"run_result\"][\"stdout\"]")" = drawn ]'
	printf 'plot(1)\ninvisible(dev.off())\nplot(2)\nstop("after plots")\n' | src plot2.R
	sc code run --lang r --json "$T_DIR/plot2.R"
	check "r: a closed device and a new one: both plots, also when the script fails" bash -c \
		'plots_ok 2 && [ "$(jget "d[\"status\"]")" = Failed ]'
	printf 'cat(1 + 1, "\\n")\n' | src noplot.R
	sc code run --lang r --json "$T_DIR/noplot.R"
	check "r: no plot gives no plots" plots_ok 0
	mkdir -p "$T_WORK/rout" && chmod 777 "$T_WORK/rout"
	sc code run --lang r --out "$T_WORK/rout" "$T_DIR/plot.R"
	check "r: --out writes the plots as PNG files" bash -c \
		'[ "$(head -c 8 "$0/plot-0002.png" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a ]' "$T_WORK/rout"
else
	skip_line "r (no Rscript on this host)"
fi

for l in rust typescript; do
	case $l in rust) t=rustc ;; typescript) t=tsc ;; esac
	have $t || skip_line "$l (no $t on this host)"
done

finish
