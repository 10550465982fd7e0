"""llm-sandbox's advisory security policy: is_safe and a refused run."""
import re
import unittest

import _util  # noqa: F401 - the package on sys.path
from sandcell import (RestrictedModule, SandboxSession, SecurityError, SecurityIssueSeverity,
                      SecurityPattern, SecurityPolicy)

SEV = SecurityIssueSeverity


def policy(threshold=SEV.MEDIUM):
    return SecurityPolicy(
        severity_threshold=threshold,
        patterns=[SecurityPattern(pattern=r"\bos\.system\s*\(", description="system calls", severity=SEV.HIGH),
                  SecurityPattern(pattern=r"\beval\s*\(", description="eval", severity=SEV.LOW)],
        restricted_modules=[RestrictedModule(name="subprocess", description="subprocess", severity=SEV.HIGH),
                            RestrictedModule(name="socket", description="network", severity=SEV.LOW)])


class TestPolicy(unittest.TestCase):
    def setUp(self):
        self.s = SandboxSession(lang="python", security_policy=policy())  # is_safe needs no cell

    def test_clean_code(self):
        self.assertEqual(self.s.is_safe("print(1 + 1)"), (True, []))

    def test_high_severity_blocks(self):
        safe, v = self.s.is_safe("import os\nos.system('ls')")
        self.assertFalse(safe)
        self.assertEqual([x.description for x in v], ["system calls"])
        safe, v = self.s.is_safe("import subprocess\nsubprocess.run(['ls'])")
        self.assertFalse(safe)
        self.assertEqual(v[0].description, "subprocess")
        self.assertFalse(self.s.is_safe("from subprocess import run")[0])
        self.assertFalse(self.s.is_safe("import json, subprocess")[0])

    def test_below_threshold_is_reported_but_allowed(self):
        safe, v = self.s.is_safe("import socket\nprint(eval('1+1'))")
        self.assertTrue(safe)
        self.assertEqual(sorted(x.description for x in v), ["eval", "network"])
        self.assertTrue(all(x.severity == SEV.LOW for x in v))

    def test_comments_are_ignored(self):
        self.assertEqual(self.s.is_safe("# os.system('rm -rf /')\n# import subprocess\nprint('#')"), (True, []))
        self.assertFalse(self.s.is_safe("print('x')  # harmless\nos.system('ls')  # not")[0])
        # a '#' inside a string does not hide the code after the string
        self.assertFalse(self.s.is_safe("print('#'); os.system('ls')")[0])

    def test_threshold_safe_blocks_everything_found(self):
        s = SandboxSession(security_policy=policy(SEV.SAFE))
        self.assertFalse(s.is_safe("eval('1')")[0])
        self.assertTrue(SandboxSession().is_safe("import subprocess") == (True, []))

    def test_javascript_comments_and_requires(self):
        p = SecurityPolicy(severity_threshold=SEV.MEDIUM,
                           restricted_modules=[RestrictedModule("child_process", "processes", SEV.HIGH)])
        s = SandboxSession(lang="javascript", security_policy=p)
        self.assertFalse(s.is_safe("const cp = require('child_process');")[0])
        self.assertTrue(s.is_safe("// require('child_process')\n/* require('child_process') */ console.log(1)")[0])

    def test_a_bad_pattern_fails_at_once(self):
        with self.assertRaises(re.error):
            SecurityPattern(pattern="(", description="bad", severity=SEV.LOW)

    def test_add_pattern_and_module(self):
        p = SecurityPolicy()
        p.add_pattern(SecurityPattern(r"\bopen\(", "files", SEV.MEDIUM))
        p.add_restricted_module(RestrictedModule("ctypes", "ffi", SEV.HIGH))
        s = SandboxSession(security_policy=p)
        self.assertFalse(s.is_safe("import ctypes")[0])
        self.assertFalse(s.is_safe("open('x')")[0])


class TestRunRefused(unittest.TestCase):
    def test_an_unsafe_run_is_refused_a_safe_one_runs(self):
        with SandboxSession(security_policy=policy()) as s:
            with self.assertRaises(SecurityError):
                s.run("import os\nos.system('echo ran > /tmp/ran')")
            self.assertNotEqual(s.execute_command("test -e /tmp/ran").exit_code, 0)
            out = s.run("import socket\nprint('low is allowed')")
            self.assertEqual(out.stdout, "low is allowed\n")


if __name__ == "__main__":
    unittest.main()
