#!/usr/bin/env bash
# sandcell code: the languages SandboxFusion runs that came after the first
# eleven (perl, lua, php, csharp, d, d_ut, verilog, scala, racket,
# kotlin_script; typescript as SandboxFusion's tsx runs it), each with the host's
# toolchain from Debian's packages: stdin, stdout, stderr and the exit code
# of one program, a run timeout, a compile error where it compiles, and the
# language's own details (php's missing <?php, D's unittest blocks,
# Verilog's tb module). Then the test-framework modes (pytest, go_test,
# junit, jest from npm: the code is a test file, the verdict the tests'), and Java's
# assertions and a jar of --files on the class path.
# ctest-timeout: 900
. "$(dirname "$0")/../lib.sh"

src() { # src NAME: write stdin to $T_DIR/NAME, readable by the test user
	cat >"$T_DIR/$1"
	chmod 644 "$T_DIR/$1"
}
have() { command -v "$1" >/dev/null 2>&1; }
field() { jget "$1"; } # a JSON path of the last --json answer
printf '21\n' | src in.txt

# LANG TOOL... : each language runs where its tools are (scripts/packages.txt
# installs them); a missing one is a skip line, not a silent pass.
declare -A TOOLS=([perl]="perl" [lua]="lua" [php]="php" [csharp]="mcs mono" [d]="gdc"
	[verilog]="iverilog vvp" [pytest]="pytest" [go_test]="go" [junit]="javac java jar"
	[java]="javac java jar" [scala]="scalac scala" [racket]="racket" [kotlin_script]="kotlinc"
	[typescript]="node tsc" [jest]="node sandcell-jest")
usable() {
	local t
	for t in ${TOOLS[$1]}; do have "$t" || { echo "skip - $1 (no $t: scripts/setup.sh installs it)"; return 1; }; done
}

# The program: read 21, print 42, write to-err on stderr, exit 3.
double_checks() { # LANG [OPTION...]: options of the first run (a JVM's slower timeouts)
	sc code run --lang "$1" "${@:2}" --stdin "$T_DIR/in.txt" --json "$T_DIR/double.$1"
	check "$1: stdin in, stdout out, exit code 3 (status Failed)" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"], d[\"run_result\"][\"return_code\"]")" = "[\"Failed\", \"42\\n\", 3]" ]'
	check "$1: stderr" bash -c '[ "$(jget "d[\"run_result\"][\"stderr\"]")" = to-err ]'
	check "$1: the exit code is sandcell's" expect_rc 3
	sc code run --lang "$1" "${@:2}" --run-timeout 1 --json "$T_DIR/spin.$1"
	check "$1: a run past --run-timeout is TimeLimitExceeded (rc 124)" bash -c \
		'[ "$(jget "d[\"run_result\"][\"status\"]")" = TimeLimitExceeded ] && [ $RC -eq 124 ]'
}
compile_error_checks() { # LANG WORD [OPTION...]: the compiler's message names WORD
	sc code run --lang "$1" "${@:3}" --json "$T_DIR/bad.$1"
	check "$1 compile error: status Failed, run_result null" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"]")" = "[\"Failed\", null]" ]'
	check "$1 compile error: the compiler's message" bash -c \
		'jget "d[\"compile_result\"][\"stdout\"] + d[\"compile_result\"][\"stderr\"]" | grep -q "$0"' "$2"
}

# --- perl ---
if usable perl; then
	printf 'my $x = <STDIN>;\nprint $x * 2, "\\n";\nprint STDERR "to-err\\n";\nexit 3;\n' | src double.perl
	printf 'while (1) {}\n' | src spin.perl
	double_checks perl
	printf 'print "alias\\n";\n' | src alias.pl
	sc code run --lang pl "$T_DIR/alias.pl"
	check "perl: the alias pl" out_is alias
fi

# --- lua ---
if usable lua; then
	printf 'local x = io.read("n")\nprint(x * 2)\nio.stderr:write("to-err\\n")\nos.exit(3)\n' | src double.lua
	printf 'while true do end\n' | src spin.lua
	double_checks lua
fi

# --- php: the <?php tag is added when the code lacks it (as SandboxFusion does) ---
if usable php; then
	printf '$x = intval(trim(fgets(STDIN)));\necho ($x * 2) . "\\n";\nfwrite(STDERR, "to-err\\n");\nexit(3);\n' | src double.php
	printf 'while (true) {}\n' | src spin.php
	double_checks php
	printf '\n  <?php\necho "tagged\\n";\n' | src tagged.php
	sc code run --lang php "$T_DIR/tagged.php"
	check "php: code with its own <?php after blanks: no second one, no blank output" out_is tagged
fi

# --- csharp (Mono) ---
if usable csharp; then
	printf 'using System;\nclass P {\n  static int Main() {\n    int x = int.Parse(Console.ReadLine());\n    Console.WriteLine(x * 2);\n    Console.Error.WriteLine("to-err");\n    return 3;\n  }\n}\n' | src double.csharp
	printf 'class P { static void Main() { while (true) {} } }\n' | src spin.csharp
	double_checks csharp
	printf 'class P { static void Main() { undeclared_thing(); } }\n' | src bad.csharp
	compile_error_checks csharp undeclared_thing
fi

if usable csharp; then
	printf 'class P {\n  static void Main() {\n    var l = new List<int> { 20, 22 };\n    Console.WriteLine(l.Sum());\n    undeclared_thing();\n  }\n}\n' | src usings.csharp
	sc code run --lang csharp --json "$T_DIR/usings.csharp"
	check "csharp: .NET's implicit usings, and the compiler's line numbers are the source's" bash -c \
		'jget "d[\"compile_result\"][\"stderr\"]" | grep -q "main.cs(5,5): error CS0103: The name .undeclared_thing"'
	# SandboxFusion's test_csharp_assertion_error: .NET's failed assert
	# ends the program and says so on stderr
	printf 'using System.Diagnostics;\npublic class Program {\n  public static void Main(string[] args) {\n    Debug.Assert(1 + 1 == 2, "fine");\n    System.Console.WriteLine("before");\n    Debug.Assert(1 == 2, "Assertion failed");\n    System.Console.WriteLine("after");\n  }\n}\n' | src assert.csharp
	sc code run --lang csharp --json "$T_DIR/assert.csharp"
	check "csharp: a failed Debug.Assert ends the program (Failed), its message on stderr, as on .NET" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"]")" = "[\"Failed\", \"before\\n\"]" ] &&
		 jget "d[\"run_result\"][\"stderr\"]" | grep -q "Assertion failed"'
fi

# --- Debian's libraries SandboxFusion's tests use (scripts/packages.txt) ---
if [ -d /usr/share/nodejs/lodash ] && have node; then
	printf 'const _ = require("lodash");\nconsole.log(_.sum([20, 22]));\n' | src lodash.js
	sc code run --lang nodejs "$T_DIR/lodash.js"
	check "nodejs: Debian's lodash (node-lodash) is found" out_is 42
fi
if [ -r /usr/share/lua/5.4/luaunit.lua ] && usable lua; then
	printf 'local lu = require("luaunit")\nfunction testAdd() lu.assertEquals(1 + 1, 3) end\nos.exit(lu.LuaUnit.run())\n' | src unit.lua
	sc code run --lang lua --json "$T_DIR/unit.lua"
	check "lua: luaunit (lua-unit) runs, a failing test fails" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stdout\"]" | grep -q "0 successes, 1 failure"'
fi

# --- d, and d_ut (SandboxFusion's D_ut: the unittest blocks run, not main) ---
if usable d; then
	printf 'import std.stdio, std.conv, std.string;\nint main() {\n  int x = readln().strip.to!int;\n  writeln(x * 2);\n  stderr.writeln("to-err");\n  return 3;\n}\n' | src double.d
	printf 'void main() { while (true) {} }\n' | src spin.d
	double_checks d
	printf 'void main() { undeclared_thing(); }\n' | src bad.d
	compile_error_checks d undeclared_thing
	printf 'import std.stdio;\nunittest { assert(1 + 1 == 2); }\nvoid main() { writeln("main ran"); }\n' | src pass.d
	sc code run --lang D_ut --json "$T_DIR/pass.d"
	check "D_ut: passing unittests succeed, and main does not run" bash -c \
		'[ "$(jget "d[\"status\"]")" = Success ] && ! jget "d[\"run_result\"][\"stdout\"]" | grep -q "main ran"'
	printf 'unittest { assert(1 + 1 == 3, "math is off"); }\nvoid main() {}\n' | src fail.d
	sc code run --lang d_ut --json "$T_DIR/fail.d"
	check "d_ut: a failing unittest fails, with its message" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stdout\"] + d[\"run_result\"][\"stderr\"]" | grep -q "math is off"'
fi

# --- verilog (Icarus): the top module is tb ---
if usable verilog; then
	printf 'module tb;\n  initial begin\n    $display("hello %%0d", 6 * 7);\n    $finish;\n  end\nendmodule\n' | src hello.verilog
	sc code run --lang verilog --json "$T_DIR/hello.verilog"
	check "verilog: compiled and simulated" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"]")" = "[\"Success\", \"hello 42\\n\"]" ]'
	printf 'module tb;\n  initial begin\n    nosuchtask_x;\n  end\nendmodule\n' | src bad.verilog
	sc code run --lang verilog --json "$T_DIR/bad.verilog"
	check "verilog compile error: status Failed, run_result null" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"]")" = "[\"Failed\", null]" ]'
fi

# --- scala: scalac, then scala OBJECT (the source's first object) ---
if usable scala; then
	printf 'object Doubler {\n  def main(args: Array[String]): Unit = {\n    val x = scala.io.StdIn.readLine().trim.toInt\n    println(x * 2)\n    System.err.println("to-err")\n    sys.exit(3)\n  }\n}\n' | src double.scala
	printf 'object Spin extends App { while (true) {} }\n' | src spin.scala
	double_checks scala --compile-timeout 120 --run-timeout 60
	printf 'object P { def main(a: Array[String]): Unit = undeclared_thing() }\n' | src bad.scala
	compile_error_checks scala undeclared_thing --compile-timeout 120
	printf 'object Main extends App {\n  def foo() = { assert((1l) == (0l)) }\n  foo()\n}\n' | src assert.scala
	sc code run --lang scala --compile-timeout 120 --run-timeout 60 --json "$T_DIR/assert.scala"
	check "scala: a failed assert fails, 'assertion failed' on stderr" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stderr\"]" | grep -q "assertion failed"'
fi

# --- racket ---
if usable racket; then
	printf '#lang racket\n(define x (read))\n(displayln (* x 2))\n(eprintf "to-err\\n")\n(exit 3)\n' | src double.racket
	printf '#lang racket\n(let loop () (loop))\n' | src spin.racket
	double_checks racket
	printf '#lang racket\n(require rackunit)\n(check-equal? (string-length "abc") 4)\n' | src check.rkt
	sc code run --lang rkt --json "$T_DIR/check.rkt"
	check "racket (alias rkt): a failed rackunit check is on stderr" bash -c \
		'jget "d[\"run_result\"][\"stderr\"]" | grep -q "FAILURE"'
fi

# --- kotlin_script: kotlinc -script (Debian's kotlin 1.3, offline) ---
if usable kotlin_script; then
	printf 'val x = readLine()!!.trim().toInt()\nprintln(x * 2)\nSystem.err.println("to-err")\nkotlin.system.exitProcess(3)\n' | src double.kotlin_script
	printf 'while (true) {}\n' | src spin.kotlin_script
	double_checks kotlin_script --run-timeout 120
	check "kotlin_script: no JVM warning on stderr" bash -c \
		'! jget "d[\"run_result\"][\"stderr\"]" | grep -q "warning"'
fi

# --- typescript: transpiled without a type check (as SandboxFusion's tsx) ---
if usable typescript; then
	printf 'import util from "util";\nimport * as fs from "fs";\nconst x: number = parseInt(fs.readFileSync(0, "utf8"));\nconsole.log(util.format("%%d", x * 2));\nconsole.error("to-err");\nprocess.exit(3);\n' | src double.typescript
	printf 'while (true) {}\n' | src spin.typescript
	double_checks typescript
	printf 'let x: number = ;\n' | src bad.typescript
	compile_error_checks typescript "Expression expected"
	printf 'const s: number = "a string";\nconsole.log(s);\n' | src loose.ts
	sc code run --lang ts --json "$T_DIR/loose.ts"
	check "typescript: a type error is not checked (tsx's way), the program runs" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"]")" = "[\"Success\", \"a string\\n\"]" ]'
fi

# --- test-framework modes: passing tests succeed, a failing one fails ---
if usable go_test && [ -d /usr/share/gocode/src/github.com/stretchr/testify/assert ]; then
	printf 'package main\nimport (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\nfunc TestSum(t *testing.T) { assert.Equal(t, 3, 1+1, "testify says") }\n' | src testify_test.go
	sc code run --lang go_test --run-timeout 300 --json "$T_DIR/testify_test.go" # testify and its deps compile first
	check "go_test: testify from Debian's Go sources, offline; its failure is the verdict" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stdout\"]" | grep -q "testify says"'
fi
verdict_checks() { # LANG GOOD BAD WORD: WORD (the failing test's name) is reported
	sc code run --lang "$1" --json "$T_DIR/$2"
	check "$1: passing tests are Success" bash -c '[ "$(jget "d[\"status\"]")" = Success ]'
	sc code run --lang "$1" --json "$T_DIR/$3"
	check "$1: a failing test is Failed, and named" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stdout\"] + d[\"run_result\"][\"stderr\"]" | grep -q "$0"' "$4"
}
if usable pytest; then
	printf 'def add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(1, 2) == 3\n' | src good_pytest.py
	printf 'def test_ok():\n    assert True\n\ndef test_broken_sum():\n    assert 1 + 1 == 3\n' | src bad_pytest.py
	verdict_checks pytest good_pytest.py bad_pytest.py test_broken_sum
fi
if usable go_test; then
	printf 'package main\nimport "testing"\nfunc TestAdd(t *testing.T) { if 1+2 != 3 { t.Fatal("sum") } }\n' | src good_test.go
	printf 'package main\nimport "testing"\nfunc TestBrokenSum(t *testing.T) { if 1+1 != 3 { t.Fatal("sum") } }\n' | src bad_test.go
	verdict_checks go_test good_test.go bad_test.go TestBrokenSum
fi
if usable junit && [ -r /usr/share/java/junit-platform-console-standalone.jar ]; then
	printf 'import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\npublic class SumTest {\n  @Test void adds() { assertEquals(3, 1 + 2); }\n}\n' | src GoodTest.java
	printf 'import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\npublic class SumTest {\n  @Test void brokenSum() { assertEquals(3, 1 + 1); }\n}\n' | src BadTest.java
	verdict_checks junit GoodTest.java BadTest.java brokenSum
elif usable junit; then
	echo "skip - junit (no /usr/share/java/junit-platform-console-standalone.jar: junit5)"
fi
if usable jest; then
	# SandboxFusion's jest samples: TypeScript with @jest/globals imported,
	# and plain JavaScript on jest's globals
	printf "import { describe, expect, test } from '@jest/globals';\nfunction len(s: string): number { return s.length; }\ndescribe('len', () => {\n  test('counts', () => { expect(len('abc')).toBe(3); });\n});\n" | src good.test.ts
	printf "describe('sums', () => {\n  test('adds', () => { expect(1 + 2).toBe(3); });\n  test('brokenSum', () => { expect(1 + 1).toBe(3); });\n  describe('inner', () => { test('also broken', () => { expect('a').toBe('b'); }); });\n});\n" | src bad.test.ts
	verdict_checks jest good.test.ts bad.test.ts brokenSum
	mkdir -p "$T_DIR/jest" && chmod 777 "$T_DIR/jest" # the test user writes --out there
	sc code run --lang jest --fetch jest-report.json --out "$T_DIR/jest/out" --json "$T_DIR/bad.test.ts"
	check "jest: jest-report.json is jest's results, as SandboxFusion's parse_jest_cases reads them" \
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
cases = [(t["status"], " > ".join(t["ancestorTitles"]), t["title"])
         for s in r["testResults"] for t in s["testResults"]]
want = [("passed", "sums", "adds"), ("failed", "sums", "brokenSum"), ("failed", "sums > inner", "also broken")]
sys.exit(0 if sorted(cases) == sorted(want) and r["numFailedTests"] == 2 else print(cases) or 1)
' "$T_DIR/jest/out/jest-report.json"
fi

# --- java: assertions on (-ea), and a jar from --files on the class path ---
if usable java; then
	mkdir -p "$T_DIR/jar/lib" "$T_DIR/files"
	printf 'package lib;\npublic class Greet { public static String hi() { return "hi from a jar"; } }\n' >"$T_DIR/jar/lib/Greet.java"
	(cd "$T_DIR/jar" && javac lib/Greet.java && jar cf "$T_DIR/files/greet.jar" lib/Greet.class)
	chmod -R a+rX "$T_DIR/files"
	printf 'public class Main {\n  public static void main(String[] a) {\n    System.out.println(lib.Greet.hi());\n    assert 1 > 2 : "assertions are on";\n  }\n}\n' | src Main.java
	sc code run --lang java --files "$T_DIR/files" --json "$T_DIR/Main.java"
	check "java: a jar of --files is on the class path" bash -c \
		'[ "$(jget "d[\"run_result\"][\"stdout\"]")" = "hi from a jar" ]'
	check "java: assertions are enabled (-ea), as SandboxFusion runs it" bash -c \
		'[ "$(jget "d[\"status\"]")" = Failed ] && jget "d[\"run_result\"][\"stderr\"]" | grep -q "assertions are on"'
fi

finish
