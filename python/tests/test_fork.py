"""session.fork(n) and Sandbox.fork(count): children with the parent's
files, each on its own, the parent running on."""
import unittest

from sandcell import (ArtifactSandboxSession, ForkError, InteractiveSandboxSession, Sandbox,
                      SandboxSession)


class TestSessionFork(unittest.TestCase):
    def test_children_have_the_files_and_are_on_their_own(self):
        with SandboxSession(lang="python") as s:
            s.execute_command("mkdir -p /sandbox/w && printf 'one\\n' > /sandbox/w/a && "
                              "ln -s a /sandbox/w/link && chmod 640 /sandbox/w/a")
            kids = s.fork(3)
            try:
                self.assertEqual(len(kids), 3)
                ids = {k.cell_id for k in kids}
                self.assertEqual(len(ids | {s.cell_id}), 4)
                for i, k in enumerate(kids):
                    self.assertIsInstance(k, SandboxSession)
                    out = k.execute_command("cat /sandbox/w/link; stat -c %a /sandbox/w/a")
                    self.assertEqual((out.exit_code, out.stdout), (0, "one\n640\n"))
                    k.execute_command("echo %d > /sandbox/w/a" % i)
                # a write in a child is its own
                for i, k in enumerate(kids):
                    self.assertEqual(k.execute_command("cat /sandbox/w/a").stdout, "%d\n" % i)
                self.assertEqual(s.execute_command("cat /sandbox/w/a").stdout, "one\n")
                # code runs in a child; the parent goes on after its children close
                self.assertEqual(kids[0].run("print(6 * 7)").stdout, "42\n")
            finally:
                for k in kids:
                    k.close()
            self.assertEqual(s.run("print('still here')").stdout, "still here\n")

    def test_a_child_outlives_its_parent(self):
        s = SandboxSession(lang="python").open()
        s.execute_command("echo kept > /tmp/f")
        (kid,) = s.fork()
        s.close()
        try:
            self.assertEqual(kid.execute_command("cat /tmp/f").stdout, "kept\n")
        finally:
            kid.close()

    def test_an_artifact_child_keeps_its_kind(self):
        with ArtifactSandboxSession(lang="python", enable_plotting=False) as s:
            (kid,) = s.fork(1)
            with kid:
                self.assertIsInstance(kid, ArtifactSandboxSession)
                self.assertEqual(kid.run("print(1)").stdout, "1\n")

    def test_replay_sessions_gives_a_child_the_parents_variables(self):
        with InteractiveSandboxSession(lang="python") as s:
            s.run("x = 20")
            s.run("x += 1")
            plain, = s.fork()
            replayed, = s.fork(1, replay_sessions=True)
            with plain, replayed:
                self.assertEqual(replayed.run("print(x * 2)").stdout, "42\n")
                self.assertNotEqual(plain.run("print(x)").exit_code, 0)

    def test_bad_counts_are_refused_before_any_request(self):
        with SandboxSession(lang="python") as s:
            for n in (0, 101, -1):
                with self.assertRaises(ValueError):
                    s.fork(n)


class TestSandboxFork(unittest.TestCase):
    def test_fork_copies_files_and_envs_not_variables(self):
        sbx = Sandbox.create(timeout=600, envs={"GREETING": "hello"})
        try:
            sbx.files.write("/home/user/data.txt", "shared\n")
            sbx.run_code("x = 5")
            kids = sbx.fork(count=2)
            try:
                self.assertEqual(len(kids), 2)
                for k in kids:
                    self.assertNotEqual(k.sandbox_id, sbx.sandbox_id)
                    self.assertEqual(k.files.read("/home/user/data.txt"), "shared\n")
                    ex = k.run_code("import os\nprint(os.environ['GREETING'])")
                    self.assertEqual("".join(ex.logs.stdout), "hello\n")
                    ex = k.run_code("x")
                    self.assertIsNotNone(ex.error)  # a fresh interpreter
                kids[0].files.write("/home/user/data.txt", "mine\n")
                self.assertEqual(kids[1].files.read("/home/user/data.txt"), "shared\n")
                self.assertEqual("".join(sbx.run_code("print(x)").logs.stdout), "5\n")
                (again,) = sbx.fork(replay_sessions=True)
                with again:
                    self.assertEqual("".join(again.run_code("print(x + 1)").logs.stdout), "6\n")
            finally:
                for k in kids:
                    k.kill()
        finally:
            sbx.kill()


class TestForkError(unittest.TestCase):
    def test_it_names_the_failures_and_keeps_the_children(self):
        e = ForkError(["a"], ["no room"])
        self.assertEqual(e.children, ["a"])
        self.assertIn("1 of 2 children not made: no room", str(e))


if __name__ == "__main__":
    unittest.main()
