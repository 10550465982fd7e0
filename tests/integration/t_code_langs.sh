#!/usr/bin/env bash
# sandcell code: the languages SandboxFusion runs that came after the first
# eleven (perl, lua, php, csharp, d, d_ut, verilog), each with the host's
# toolchain from Debian's packages: stdin, stdout, stderr and the exit code
# of one program, a run timeout, a compile error where it compiles, and the
# language's own details (php's missing <?php, D's unittest blocks,
# Verilog's tb module). Then the test-framework modes (pytest, go_test,
# junit: the code is a test file, the verdict the tests'), and Java's
# assertions and a jar of --files on the class path.
# ctest-timeout: 300
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
	[java]="javac java jar")
usable() {
	local t
	for t in ${TOOLS[$1]}; do have "$t" || { echo "skip - $1 (no $t: scripts/setup.sh installs it)"; return 1; }; done
}

# The program: read 21, print 42, write to-err on stderr, exit 3.
double_checks() { # LANG
	sc code run --lang "$1" --stdin "$T_DIR/in.txt" --json "$T_DIR/double.$1"
	check "$1: stdin in, stdout out, exit code 3 (status Failed)" bash -c \
		'[ "$(jget "d[\"status\"], d[\"run_result\"][\"stdout\"], d[\"run_result\"][\"return_code\"]")" = "[\"Failed\", \"42\\n\", 3]" ]'
	check "$1: stderr" bash -c '[ "$(jget "d[\"run_result\"][\"stderr\"]")" = to-err ]'
	check "$1: the exit code is sandcell's" expect_rc 3
	sc code run --lang "$1" --run-timeout 1 --json "$T_DIR/spin.$1"
	check "$1: a run past --run-timeout is TimeLimitExceeded (rc 124)" bash -c \
		'[ "$(jget "d[\"run_result\"][\"status\"]")" = TimeLimitExceeded ] && [ $RC -eq 124 ]'
}
compile_error_checks() { # LANG WORD: the compiler's message names WORD
	sc code run --lang "$1" --json "$T_DIR/bad.$1"
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

# --- test-framework modes: passing tests succeed, a failing one fails ---
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
