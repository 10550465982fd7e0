"""The E2B-style facade: Sandbox.create, run_code, commands, files, kill."""
import base64
import time
import unittest

import _util
from sandcell import (CommandExitException, Execution, NotOpenSessionError, Sandbox,
                      SandboxTimeoutError)


class TestE2B(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # the class may outlast the default 300 s lifetime on a loaded host
        cls.sbx = Sandbox.create(timeout=3600)

    @classmethod
    def tearDownClass(cls):
        cls.sbx.kill()

    def test_run_code_keeps_state(self):
        ex = self.sbx.run_code("x = 20\nprint('set')")
        self.assertIsInstance(ex, Execution)
        self.assertEqual(("".join(ex.logs.stdout), ex.error), ("set\n", None))
        ex = self.sbx.run_code("print(x * 2 + 2)")
        self.assertEqual("".join(ex.logs.stdout), "42\n")

    def test_run_code_error(self):
        ex = self.sbx.run_code("def f():\n    raise KeyError('nope')\nf()")
        self.assertIsNotNone(ex.error)
        self.assertEqual(ex.error.name, "KeyError")
        self.assertIn("nope", ex.error.value)
        self.assertIn("Traceback", ex.error.traceback)

    def test_run_code_streams_and_other_languages(self):
        out, err = [], []
        ex = self.sbx.run_code("import sys\nprint('o', flush=True)\nprint('e', file=sys.stderr)",
                               on_stdout=out.append, on_stderr=err.append)
        self.assertEqual(("".join(ex.logs.stdout), "".join(ex.logs.stderr)), ("o\n", "e\n"))
        self.assertEqual((out, err), (ex.logs.stdout, ex.logs.stderr))
        if "javascript" in _util.languages():
            ex = self.sbx.run_code("console.log([1, 2].map(x => x * 3).join(','))", language="javascript")
            self.assertEqual("".join(ex.logs.stdout), "3,6\n")

    def test_run_code_plot_result(self):
        if not _util.host_python_has("matplotlib"):
            self.skipTest("no matplotlib")
        ex = self.sbx.run_code("import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.show()")
        self.assertEqual(len(ex.results), 1)
        self.assertEqual(base64.b64decode(ex.results[0].png)[:4], b"\x89PNG")
        self.assertEqual(ex.results[0].formats(), ["png"])

    def test_commands(self):
        seen = []
        r = self.sbx.commands.run("echo one; echo two", on_stdout=seen.append)
        self.assertEqual((r.exit_code, r.stdout), (0, "one\ntwo\n"))
        self.assertEqual("".join(seen), r.stdout)
        r = self.sbx.commands.run("pwd", cwd="/tmp")
        self.assertEqual(r.stdout, "/tmp\n")
        r = self.sbx.commands.run("echo $GREETING", envs={"GREETING": "hello"})
        self.assertEqual(r.stdout, "hello\n")
        with self.assertRaises(CommandExitException) as cm:
            self.sbx.commands.run("echo bad >&2; exit 7")
        self.assertEqual((cm.exception.exit_code, cm.exception.stderr), (7, "bad\n"))
        with self.assertRaises(SandboxTimeoutError):
            self.sbx.commands.run("sleep 60", timeout=1)

    def test_files(self):
        f = self.sbx.files
        f.write("notes/a.txt", "alpha")
        f.write("/home/user/notes/b.bin", b"\x00\x01")
        self.assertEqual(f.read("notes/a.txt"), "alpha")
        self.assertEqual(f.read("notes/b.bin", format="bytes"), b"\x00\x01")
        self.sbx.commands.run("mkdir -p notes/sub")
        entries = f.list("notes")
        self.assertEqual([(e.name, e.type) for e in entries], [("a.txt", "file"), ("b.bin", "file"), ("sub", "dir")])
        self.assertEqual(entries[0].path, "/home/user/notes/a.txt")
        self.assertTrue(f.exists("notes/a.txt"))
        f.remove("notes/a.txt")
        self.assertFalse(f.exists("notes/a.txt"))
        with self.assertRaises(FileNotFoundError):
            f.read("notes/missing.txt")
        # code sees the files in its working directory
        self.assertEqual("".join(self.sbx.run_code("print(open('notes/b.bin','rb').read())").logs.stdout),
                         "b'\\x00\\x01'\n")


class TestE2BFaces(unittest.TestCase):
    """Code written for E2B: the value of a last expression, envs, timeout,
    background commands."""

    @classmethod
    def setUpClass(cls):
        cls.sbx = Sandbox.create(envs={"GREETING": "hello from envs"}, timeout=3600)

    @classmethod
    def tearDownClass(cls):
        cls.sbx.kill()

    def test_last_expression_is_the_text_result(self):
        ex = self.sbx.run_code("x = 41\nx + 1")
        self.assertEqual(ex.text, repr(41 + 1))
        self.assertEqual("".join(ex.logs.stdout), "")
        self.assertEqual([(r.text, r.is_main_result) for r in ex.results], [(repr(41 + 1), True)])
        self.assertIn("text", ex.results[0].formats())
        ex = self.sbx.run_code("print('printed')\n'ab' * 2  # a comment")
        self.assertEqual(("".join(ex.logs.stdout), ex.text), ("printed\n", repr("ab" * 2)))
        self.assertEqual("".join(self.sbx.run_code("print(_)").logs.stdout), "ab" * 2 + "\n")
        for code in ("x = 5", "None", "x;", "print(x)"):
            with self.subTest(code=code):
                ex = self.sbx.run_code(code)
                self.assertEqual((ex.text, ex.results, ex.error), (None, [], None))
        ex = self.sbx.run_code("1 / 0")
        self.assertEqual((ex.text, ex.error.name), (None, "ZeroDivisionError"))

    def test_envs_reach_commands_and_code(self):
        want = "hello from envs"
        self.assertEqual(self.sbx.commands.run("echo $GREETING").stdout, want + "\n")
        self.assertEqual("".join(self.sbx.run_code("import os\nprint(os.environ['GREETING'])").logs.stdout),
                         want + "\n")
        self.assertEqual(self.sbx.commands.run("echo $GREETING $OTHER", envs={"OTHER": "too"}).stdout,
                         want + " too\n")
        code = "import os, subprocess\nprint(os.environ.get('ONCE'), subprocess.check_output(['sh', '-c', 'echo $ONCE']))"
        ex = self.sbx.run_code(code, envs={"ONCE": "set"})
        self.assertEqual("".join(ex.logs.stdout), "set b'set\\n'\n")
        ex = self.sbx.run_code(code)
        self.assertEqual("".join(ex.logs.stdout), "None b'\\n'\n")

    def test_background_command(self):
        # the command waits for a file written after run() returned: only a
        # command that runs in the background gets past the wait
        h = self.sbx.commands.run("echo started; while [ ! -e go ]; do sleep 0.05; done; echo $GREETING",
                                  background=True, timeout=60)
        self.assertIsInstance(h.pid, int)
        self.assertGreater(h.pid, 1)
        self.sbx.files.write("go", "")
        r = h.wait()
        self.assertEqual((r.exit_code, r.stdout), (0, "started\nhello from envs\n"))
        self.assertEqual(h.exit_code, 0)
        self.assertFalse(h.kill())  # it has ended

    def test_background_command_killed(self):
        h = self.sbx.commands.run("sleep 120", background=True, timeout=300)
        self.assertEqual(self.sbx.commands.run("kill -0 %d && echo alive" % h.pid).stdout, "alive\n")
        self.assertTrue(h.kill())
        with self.assertRaises(CommandExitException):
            h.wait()

        def gone():
            try:
                self.sbx.commands.run("kill -0 %d" % h.pid)
                return False
            except CommandExitException:
                return True
        self.assertTrue(_util.wait_for(gone, 30))
        h2 = self.sbx.commands.run("exit 3", background=True)
        with self.assertRaises(CommandExitException) as cm:
            h2.wait()
        self.assertEqual(cm.exception.exit_code, 3)


class TestE2BTimeout(unittest.TestCase):
    def test_timeout_is_the_sandboxs_lifetime(self):
        sbx = Sandbox.create(timeout=10)  # time for a first command on a slow host
        try:
            self.assertEqual(sbx.commands.run("echo up").stdout, "up\n")
            self.assertTrue(_util.wait_for(lambda: not sbx.is_running(), 60))
            with self.assertRaises(NotOpenSessionError):
                sbx.commands.run("echo still")
        finally:
            sbx.kill()
        with Sandbox.create(timeout=2) as sbx:
            sbx.set_timeout(0)  # never
            time.sleep(3)
            self.assertEqual(sbx.commands.run("echo up").stdout, "up\n")

    def test_unknown_keywords_raise(self):
        with self.assertRaises(TypeError) as cm:
            Sandbox.create(api_key="e2b_123")
        self.assertIn("api_key", str(cm.exception))


class TestKill(unittest.TestCase):
    def test_kill(self):
        sbx = Sandbox.create()
        self.assertTrue(sbx.is_running())
        sid = sbx.sandbox_id
        self.assertTrue(sid)
        sbx.kill()
        self.assertFalse(sbx.is_running())
        with self.assertRaises(NotOpenSessionError):
            sbx.run_code("print(1)")
        with Sandbox.create() as s2:
            self.assertNotEqual(s2.sandbox_id, sid)


if __name__ == "__main__":
    unittest.main()
