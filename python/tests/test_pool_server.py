"""SandboxPool, the private server's lifecycle, and SANDCELL_URL/TOKEN."""
import os
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

import _util
from sandcell import SandboxError, SandboxPool, SandboxSession, _client


class TestPool(unittest.TestCase):
    def test_pre_warmed_sessions_no_state_between_users(self):
        with SandboxPool(size=2, lang="python") as pool:
            self.assertEqual(pool.available(), 2)
            a, b = pool.acquire(), pool.acquire()
            self.assertTrue(a.is_open and b.is_open)
            self.assertNotEqual(a.cell_id, b.cell_id)
            a.execute_command("echo secret > /tmp/left")
            old = a.cell_id
            pool.release(a)
            self.assertFalse(a.is_open)
            with pool.session(timeout=120) as c:
                self.assertNotEqual(c.cell_id, old)
                self.assertNotEqual(c.execute_command("cat /tmp/left").exit_code, 0)
                self.assertEqual(c.run("print('pooled')").stdout, "pooled\n")
            pool.release(b)
            self.assertTrue(_util.wait_for(lambda: pool.available() == 2, 120))

    def test_threads_share_a_pool(self):
        out = []
        with SandboxPool(size=2, lang="python") as pool:
            def work(k):
                with pool.session(timeout=120) as s:
                    out.append(s.run("print(%d)" % k).stdout)
            ts = [threading.Thread(target=work, args=(k,)) for k in range(5)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(sorted(out), ["%d\n" % k for k in range(5)])

    def test_other_languages(self):
        if "javascript" not in _util.languages():
            self.skipTest("no node")
        with SandboxPool(size=1, lang="javascript") as pool, pool.session() as s:
            self.assertEqual(s.run("console.log('js pooled')").stdout, "js pooled\n")


class TestPrivateServer(unittest.TestCase):
    def test_private_socket_and_stop(self):
        srv = _client.PrivateServer()
        try:
            st = os.stat(srv.dir)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
            self.assertEqual(st.st_uid, os.getuid())
            self.assertTrue(stat.S_ISSOCK(os.stat(srv.sock).st_mode))
            self.assertEqual(srv.client.json("GET", "/cells"), {"cells": []})
        finally:
            srv.stop()
        self.assertIsNotNone(srv.proc.poll())
        self.assertEqual(srv.proc.returncode, 0)
        self.assertFalse(os.path.exists(srv.dir))

    def test_a_killed_client_leaves_nothing(self):
        # a Python process SIGKILLed with its private server up: the server
        # dies with it, and the next private server removes its directory
        child = subprocess.run(
            [sys.executable, "-c",
             "import os, signal, sys\n"
             "sys.path.insert(0, sys.argv[1])\n"
             "from sandcell import _client\n"
             "s = _client.PrivateServer()\n"
             "print(s.dir, s.proc.pid, flush=True)\n"
             "os.kill(os.getpid(), signal.SIGKILL)\n",
             os.path.dirname(_util.HERE)],
            capture_output=True, text=True, timeout=180)
        self.assertEqual(child.returncode, -9, child.stderr)
        left_dir, serve_pid = child.stdout.split()
        self.assertTrue(_util.wait_for(lambda: not os.path.exists("/proc/" + serve_pid), 60),
                        "the private server outlived its client")
        # (another private server started meanwhile may have removed it already)
        srv = _client.PrivateServer()
        try:
            self.assertFalse(os.path.exists(left_dir))
            self.assertTrue(os.path.isdir(srv.dir))
        finally:
            srv.stop()

    def test_a_missing_binary_says_what_to_do(self):
        with mock.patch.dict(os.environ, {"SANDCELL_BIN": "/nonexistent/sandcell"}):
            with self.assertRaises(SandboxError) as cm:
                _client.PrivateServer()
        self.assertIn("/nonexistent/sandcell", str(cm.exception))


class TestRemoteServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.token = "tok-" + os.urandom(12).hex()
        tok = os.path.join(cls.dir, "token")
        with open(tok, "w") as f:
            f.write(cls.token + "\n")
        cls.portfile = os.path.join(cls.dir, "port")
        # --ephemeral: the suite may run twice at once (t_python_client
        # runs it under two interpreters) on one state root, which only one
        # restartable server may hold
        cls.log = os.path.join(cls.dir, "serve.log")
        with open(cls.log, "wb") as log:
            cls.proc = subprocess.Popen([_client.find_binary(), "serve", "--listen", "127.0.0.1:0",
                                         "--token-file", tok, "--port-file", cls.portfile, "--pool", "1",
                                         "--ephemeral"],
                                        stdout=subprocess.DEVNULL, stderr=log)
        ok = _util.wait_for(lambda: cls.proc.poll() is not None or
                            (os.path.exists(cls.portfile) and os.path.getsize(cls.portfile) > 0), 120)
        if not ok or cls.proc.poll() is not None:
            cls.proc.kill()
            with open(cls.log, errors="replace") as f:
                raise AssertionError("the test server did not start: " + f.read()[-2000:])
        with open(cls.portfile) as f:
            cls.url = "http://127.0.0.1:%s" % f.read().strip()

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(120)
        import shutil
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_sandcell_url_and_token(self):
        with mock.patch.dict(os.environ, {"SANDCELL_URL": self.url, "SANDCELL_TOKEN": self.token}):
            with SandboxSession() as s:
                self.assertEqual(s.run("print('remote')").stdout, "remote\n")
                cells = _client.Client(self.url, self.token).json("GET", "/cells")["cells"]
                self.assertIn(s.cell_id, [c["id"] for c in cells])

    def test_a_wrong_token_is_refused(self):
        with mock.patch.dict(os.environ, {"SANDCELL_URL": self.url, "SANDCELL_TOKEN": "wrong-token"}):
            with self.assertRaises(SandboxError) as cm:
                SandboxSession().open()
        self.assertIn("401", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
