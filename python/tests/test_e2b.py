"""The E2B-style facade: Sandbox.create, run_code, commands, files, kill."""
import base64
import unittest

import _util
from sandcell import (CommandExitException, Execution, NotOpenSessionError, Sandbox,
                      SandboxTimeoutError)


class TestE2B(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sbx = Sandbox.create()

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
