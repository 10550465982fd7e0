"""Every python example of python/README.md runs (and prints what its
comments say, where a comment gives a value)."""
import contextlib
import io
import os
import re
import unittest

import _util

README = os.path.join(os.path.dirname(_util.HERE), "README.md")


def examples():
    with open(README) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


class TestReadme(unittest.TestCase):
    def test_examples_run(self):
        blocks = examples()
        self.assertGreaterEqual(len(blocks), 7)
        for i, code in enumerate(blocks):
            if "matplotlib" in code and not _util.host_python_has("matplotlib"):
                continue
            if 'lang="cpp"' in code and "cpp" not in _util.languages():
                continue
            with self.subTest(example=i, first_line=code.splitlines()[0]):
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, "README example %d" % i, "exec"), {})
                printed = buf.getvalue().replace("\n", " ").split()
                # each "# value" comment after a print must appear in the output
                for want in re.findall(r"print\(.*\)\s*#\s*(.+)$", code, re.M):
                    for word in want.replace("/", " ").split():
                        self.assertIn(word, printed + [repr(x) for x in printed], (want, buf.getvalue()))


if __name__ == "__main__":
    unittest.main()
