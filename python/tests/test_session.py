"""SandboxSession against real cells: languages, streaming, timeouts,
commands, files, runtime_configs."""
import os
import tempfile
import threading
import unittest
import warnings
from pathlib import Path

import _util
from sandcell import (ConsoleOutput, LibraryInstallationNotSupportedError, NotOpenSessionError,
                      SandboxSession, SandboxTimeoutError, SecurityError)

HELLO = {
    "python": ("import sys\nprint('hi from python')\nsys.exit(3)\n", "hi from python\n"),
    "javascript": ("console.log('hi from node'); process.exit(3);\n", "hi from node\n"),
    "cpp": ("#include <iostream>\nint main() { std::cout << \"hi from cpp\\n\"; return 3; }\n", "hi from cpp\n"),
    "c": ("#include <stdio.h>\nint main(void) { puts(\"hi from c\"); return 3; }\n", "hi from c\n"),
    "java": ("public class Hello { public static void main(String[] a) { System.out.println(\"hi from java\");"
             " System.exit(3); } }\n", "hi from java\n"),
    "bash": ("echo hi from bash; exit 3\n", "hi from bash\n"),
    "ruby": ("puts 'hi from ruby'; exit 3\n", "hi from ruby\n"),
}


class TestLanguages(unittest.TestCase):
    def test_each_language_runs_with_its_exit_code(self):
        for lang, (code, want) in HELLO.items():
            if lang not in _util.languages():
                continue
            with self.subTest(lang=lang), SandboxSession(lang=lang) as s:
                out = s.run(code, timeout=120)
                self.assertIsInstance(out, ConsoleOutput)
                self.assertEqual(out.stdout, want)
                self.assertEqual(out.exit_code, 3)
                self.assertFalse(out.success())

    def test_a_compile_error_is_a_failed_run_with_the_compiler_message(self):
        if "cpp" not in _util.languages():
            self.skipTest("no g++")
        with SandboxSession(lang="cpp") as s:
            out = s.run("int main() { return undeclared; }", timeout=120)
            self.assertNotEqual(out.exit_code, 0)
            self.assertIn("undeclared", out.stderr)


class TestSession(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = SandboxSession(lang="python").open()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def test_run_output_and_workdir(self):
        out = self.s.run("import os, sys\nprint(os.getcwd())\nprint('err', file=sys.stderr)")
        self.assertEqual((out.exit_code, out.stdout, out.stderr), (0, "/sandbox\n", "err\n"))
        self.assertTrue(out.success())

    def test_files_stay_between_runs_state_does_not(self):
        self.s.run("open('kept.txt', 'w').write('kept')\nx = 1")
        out = self.s.run("print(open('kept.txt').read())\nprint('x' in dir())")
        self.assertEqual(out.stdout, "kept\nFalse\n")

    def test_stdout_is_streamed_while_the_code_runs(self):
        # the code waits for a file that the callback creates when the first
        # line arrives: without streaming it would run into its timeout
        s = self.s
        code = ("import os, sys, time\nprint('first', flush=True)\nprint('warn', file=sys.stderr, flush=True)\n"
                "while not os.path.exists('/tmp/go-run'): time.sleep(0.05)\n"
                "for i in range(50): print('line', i, flush=True)\n")
        chunks, errs, touched = [], [], []

        def on_out(d):
            chunks.append(d)
            if "first" in "".join(chunks) and not touched:
                touched.append(s.execute_command("touch /tmp/go-run"))

        out = s.run(code, timeout=120, on_stdout=on_out, on_stderr=errs.append)
        self.assertEqual(out.exit_code, 0)
        self.assertEqual("".join(chunks), out.stdout)
        self.assertTrue(out.stdout.startswith("first\nline 0\n"))
        self.assertEqual("".join(errs), out.stderr)
        self.assertEqual(out.stderr, "warn\n")

    def test_a_timeout_raises(self):
        with self.assertRaises(SandboxTimeoutError):
            self.s.run("import time\ntime.sleep(60)", timeout=1)
        with self.assertRaises(SandboxTimeoutError):
            self.s.execute_command("sleep 60", timeout=1)
        self.assertEqual(self.s.run("print('still here')").stdout, "still here\n")

    def test_execute_command_and_workdir(self):
        out = self.s.execute_command("pwd; echo $((6*7))")
        self.assertEqual(out.stdout, "/sandbox\n42\n")
        out = self.s.execute_command("pwd", workdir="/tmp")
        self.assertEqual(out.stdout, "/tmp\n")
        out = self.s.execute_command("echo no >&2; exit 5")
        self.assertEqual((out.exit_code, out.stderr), (5, "no\n"))
        with self.assertRaises(SecurityError):
            self.s.execute_command("pwd", workdir="/tmp/../etc")

    def test_execute_commands_in_order_stopping_at_a_failure(self):
        out = self.s.execute_commands(["mkdir -p seq", ("echo a > f", "/sandbox/seq"), "cat seq/f"])
        self.assertEqual(out.stdout, "a\n")
        out = self.s.execute_commands(["false", "echo never > never.txt"])
        self.assertEqual(out.exit_code, 1)
        self.assertNotEqual(self.s.execute_command("test -e never.txt").exit_code, 0)

    def test_copy_a_file_in_and_out(self):
        with tempfile.TemporaryDirectory() as d:
            src = Path(d, "in.txt")
            src.write_bytes(b"hello\x00bytes")
            self.s.copy_to_runtime(str(src), "/sandbox/sub/in.txt")
            out = self.s.run("print(len(open('sub/in.txt', 'rb').read()))")
            self.assertEqual(out.stdout, "11\n")
            self.s.copy_from_runtime("/sandbox/sub/in.txt", str(Path(d, "back.txt")))
            self.assertEqual(Path(d, "back.txt").read_bytes(), b"hello\x00bytes")

    def test_copy_a_directory_in_and_out(self):
        with tempfile.TemporaryDirectory() as d:
            tree = Path(d, "tree")
            (tree / "a" / "b").mkdir(parents=True)
            (tree / "top.txt").write_text("top")
            (tree / "a" / "b" / "deep.txt").write_text("deep")
            self.s.copy_to_runtime(str(tree), "/sandbox/tree")
            out = self.s.execute_command("cat tree/top.txt tree/a/b/deep.txt")
            self.assertEqual(out.stdout, "topdeep")
            self.s.execute_command("echo new > tree/a/made.txt; ln -s /etc/passwd tree/escape")
            self.s.copy_from_runtime("/sandbox/tree", str(Path(d, "out")))
            self.assertEqual(Path(d, "out", "a", "b", "deep.txt").read_text(), "deep")
            self.assertEqual(Path(d, "out", "a", "made.txt").read_text(), "new\n")
            self.assertFalse(os.path.lexists(Path(d, "out", "escape")))

    def test_copy_a_directory_to_a_path_not_there_yet(self):
        # llm-sandbox makes the destination (and its parents), even before
        # the session ran anything
        with tempfile.TemporaryDirectory() as d, SandboxSession(lang="python") as s:
            tree = Path(d, "data")
            (tree / "sub").mkdir(parents=True)
            (tree / "sub" / "x.csv").write_text("a,b\n")
            s.copy_to_runtime(str(tree), "/sandbox/inputs/deeper/data")
            out = s.execute_command("cat /sandbox/inputs/deeper/data/sub/x.csv")
            self.assertEqual((out.exit_code, out.stdout), (0, "a,b\n"))

    def test_missing_sources_and_dotdot(self):
        with self.assertRaises(FileNotFoundError):
            self.s.copy_to_runtime("/nonexistent/file", "/sandbox/x")
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(FileNotFoundError):
                self.s.copy_from_runtime("/sandbox/no-such-file", str(Path(d, "x")))
            Path(d, "f").write_text("x")
            with self.assertRaises(SecurityError):
                self.s.copy_to_runtime(str(Path(d, "f")), "/sandbox/../etc/x")
            with self.assertRaises(SecurityError):
                self.s.copy_from_runtime("../../etc/passwd", str(Path(d, "y")))
            self.assertFalse(Path(d, "y").exists())

    def test_install(self):
        if not _util.host_python_has("json"):
            self.skipTest("no python")
        # a library the cell's python already imports needs no network
        lib = "numpy" if _util.host_python_has("numpy") else None
        if lib:
            self.s.install([lib])
            self.assertEqual(self.s.run("import numpy\nprint(numpy.add(1, 2))").stdout, "3\n")
        with SandboxSession(lang="bash") as b, self.assertRaises(LibraryInstallationNotSupportedError):
            b.install(["jq"])


class TestLibraries(unittest.TestCase):
    """libraries= that the cell's python imports already need no network."""

    def setUp(self):
        self.lib = next((m for m in ("numpy", "matplotlib", "traitlets") if _util.host_python_has(m)), None)
        if not self.lib:
            self.skipTest("the cell's python has none of numpy, matplotlib, traitlets")

    def test_libraries_of_the_session(self):
        code = "import %s\nprint('imported')" % self.lib
        with SandboxSession(lang="python", libraries=[self.lib]) as s:
            self.assertEqual(s.run(code).stdout, "imported\n")
            self.assertEqual(s.run(code, libraries=[self.lib]).stdout, "imported\n")

    def test_libraries_of_an_interactive_run(self):
        from sandcell import InteractiveSandboxSession
        code = "import %s\nprint('imported')" % self.lib
        with InteractiveSandboxSession(lang="python", libraries=[self.lib]) as s:
            out = s.run(code, libraries=[self.lib])
            self.assertEqual((out.exit_code, out.stdout), (0, "imported\n"), out.stderr)


class TestBackend(unittest.TestCase):
    def test_llm_sandbox_backends(self):
        from sandcell import SandboxBackend, UnsupportedBackendError
        self.assertLessEqual({"docker", "kubernetes", "podman", "micromamba"}, {b.value for b in SandboxBackend})
        with SandboxSession(backend=SandboxBackend.DOCKER, lang="python") as s:
            self.assertEqual(s.run("print(6 * 7)").stdout, "%d\n" % (6 * 7))
        for b in (SandboxBackend.KUBERNETES, SandboxBackend.MICROMAMBA, "no-such-backend"):
            with self.subTest(backend=b), self.assertRaises(UnsupportedBackendError) as cm:
                SandboxSession(backend=b, lang="python")
            self.assertIn(getattr(b, "value", b), str(cm.exception))


class TestLifecycle(unittest.TestCase):
    def test_not_open(self):
        s = SandboxSession()
        with self.assertRaises(NotOpenSessionError):
            s.run("print(1)")
        with self.assertRaises(NotOpenSessionError):
            s.execute_command("true")
        s.open()
        self.assertEqual(s.run("print(1)").stdout, "1\n")
        s.close()
        with self.assertRaises(NotOpenSessionError):
            s.run("print(1)")

    def test_unknown_arguments_are_ignored_with_a_warning(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with SandboxSession(lang="python", frobnicate=3, runtime_configs={"privileged": True}) as s:
                self.assertEqual(s.run("print(2)").stdout, "2\n")
        msgs = " ".join(str(x.message) for x in w)
        self.assertIn("frobnicate", msgs)
        self.assertIn("privileged", msgs)

    def test_sessions_are_apart(self):
        with SandboxSession() as a, SandboxSession() as b:
            a.execute_command("echo mine > /tmp/own")
            self.assertNotEqual(b.execute_command("cat /tmp/own").exit_code, 0)
            self.assertNotEqual(a.cell_id, b.cell_id)

    def test_concurrent_runs_in_threads(self):
        results = {}

        def work(k):
            with SandboxSession() as s:
                results[k] = s.run("print(%d * 2)" % k).stdout

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(results, {k: "%d\n" % (k * 2) for k in range(4)})


class TestRuntimeConfigs(unittest.TestCase):
    def test_mem_limit(self):
        with SandboxSession(runtime_configs={"mem_limit": "64m"}) as s:
            out = s.run("a = bytearray(400 * 1024 * 1024)\nprint('allocated')", timeout=60)
            self.assertNotEqual(out.exit_code, 0)
            self.assertNotIn("allocated", out.stdout)
            self.assertEqual(s.run("a = bytearray(8 * 1024 * 1024)\nprint('ok')").stdout, "ok\n")

    def test_pids_limit(self):
        code = ("import os, signal, time\nkids = []\n"
                "for i in range(64):\n"
                "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                "    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    kids.append(pid)\n"
                "print(len(kids))\n"
                "for k in kids: os.kill(k, signal.SIGKILL)\n")
        with SandboxSession(runtime_configs={"pids_limit": 16}) as s:
            out = s.run(code, timeout=60)
            self.assertLess(int(out.stdout), 16)
        with SandboxSession() as s:
            self.assertEqual(s.run(code, timeout=60).stdout, "64\n")

    def test_cpu_quota_reaches_the_server(self):
        with SandboxSession(runtime_configs={"cpu_quota": 50000, "cpu_period": 100000}) as s:
            self.assertEqual(s.run("print(1)").stdout, "1\n")
        from sandcell import _client
        keys = [k for k in _client._servers if "--cpus" in k]
        self.assertTrue(keys and keys[0][keys[0].index("--cpus") + 1] == "0.5", _client._servers.keys())

    def test_network_mode(self):
        probe = ("import socket\ns = socket.socket()\ns.settimeout(5)\n"
                 "try:\n    s.connect(('1.1.1.1', 53))\n    print('connected')\n"
                 "except OSError as e:\n    print('refused')\n")
        with SandboxSession(runtime_configs={"network_mode": "none"}) as s:
            self.assertEqual(s.run(probe, timeout=30).stdout, "refused\n")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with SandboxSession(runtime_configs={"network_mode": "bridge"}) as s:
                self.assertEqual(s.run(probe, timeout=30).stdout, "refused\n")
        self.assertTrue(any("network_mode" in str(x.message) for x in w))


if __name__ == "__main__":
    unittest.main()
