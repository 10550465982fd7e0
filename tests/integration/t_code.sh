#!/usr/bin/env bash
# sandcell code: languages table and one-shot runs with the host's toolchains.
. "$(dirname "$0")/../lib.sh"

src() { # src NAME: write stdin to $T_DIR/NAME, readable by the test user
	cat >"$T_DIR/$1"
	chmod 644 "$T_DIR/$1"
}
# jq-less JSON path: jget 'd["run_result"]["stdout"]'
jget() {
	printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v) if not isinstance(v,str) else v, end="")' "$1"
}
export -f jget
have() { command -v "$1" >/dev/null 2>&1; }
skip_line() { echo "skip - $*"; }

# --- the table ---
sc code languages
check "languages lists python" out_has "^python "
check "languages lists the SandboxFusion alias nodejs" out_has "nodejs"
sc code languages --json
check "languages --json is a JSON list with 11 rows" bash -c \
	'printf "%s" "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d)==11 and all(\"available\" in x for x in d)"'
if have bash; then
	check "languages --json says bash is available here" bash -c \
		'printf "%s" "$OUT" | python3 -c "import json,sys; d={x[\"name\"]:x for x in json.load(sys.stdin)}; assert d[\"bash\"][\"available\"] is True"'
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
sc code run --lang python --fetch missing.txt --json "$T_DIR/writes.py"
check "--fetch of a missing file is a SandboxError naming it" bash -c \
	'[ "$(jget "d[\"status\"]")" = SandboxError ] && jget "d[\"message\"]" | grep -q missing.txt'

mkdir -p "$T_DIR/files" && printf 'from-files\n' >"$T_DIR/files/data.txt" && chmod -R a+rX "$T_DIR/files"
printf 'print(open("data.txt").read().strip())\n' | src readfiles.py
sc code run --lang python --files "$T_DIR/files" "$T_DIR/readfiles.py"
check "--files copies a directory into the work directory" out_is from-files

# a memory limit: the program fails (killed, or its allocation refused
# where only rlimits are available); a kill is reported as "memory".
printf '#include <stdlib.h>\n#include <string.h>\nint main(void){for(int i=0;i<64;i++){char*p=malloc(16<<20);if(!p)return 9;memset(p,1,16<<20);}return 0;}\n' | src hog.c
if have gcc; then
	sc code run --lang c --memory 64M --json "$T_DIR/hog.c"
	check "memory limit: the program does not succeed" bash -c \
		'[ "$(jget "d[\"run_result\"][\"status\"]")" = Finished ] && [ "$(jget "d[\"run_result\"][\"return_code\"]")" != 0 ]'
	check "memory limit: limit_hit is null or memory" bash -c \
		'l=$(jget "d[\"limit_hit\"]"); [ "$l" = null ] || [ "$l" = memory ]'
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

for l in go rust r ruby typescript; do
	case $l in go) t=go ;; rust) t=rustc ;; r) t=Rscript ;; ruby) t=ruby ;; typescript) t=tsc ;; esac
	have $t || skip_line "$l (no $t on this host)"
done

finish
