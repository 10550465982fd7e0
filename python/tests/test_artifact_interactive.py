"""ArtifactSandboxSession (plots) and InteractiveSandboxSession (state)."""
import base64
import os
import re
import tempfile
import unittest

import _util
from sandcell import (ArtifactSandboxSession, ExecutionResult, InteractiveSandboxSession,
                      LanguageNotSupportedError, LanguageNotSupportPlotError, PlotOutput,
                      SandboxTimeoutError)

PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [%d, 1, 2])\nplt.show()\n"
PNG = b"\x89PNG\r\n\x1a\n"
# what model-written plotting code usually does: pick Agg itself, then show()
AGG = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
       "plt.plot([1, 2, 3], [%d, 1, 2])\nplt.show()\n")


class TestArtifact(unittest.TestCase):
    def setUp(self):
        if not _util.host_python_has("matplotlib"):
            self.skipTest("no matplotlib in the cell's python3")

    def test_plots_accumulate_until_clear_plots(self):
        with ArtifactSandboxSession(lang="python") as s:
            r1 = s.run(PLOT % 1)
            self.assertIsInstance(r1, ExecutionResult)
            self.assertEqual(r1.exit_code, 0)
            self.assertEqual(len(r1.plots), 1)
            p = r1.plots[0]
            self.assertIsInstance(p, PlotOutput)
            self.assertEqual(p.format, "png")
            self.assertEqual(base64.b64decode(p.content_base64)[:8], PNG)
            self.assertGreater(p.width, 0)
            r2 = s.run(PLOT % 2)
            self.assertEqual(len(r2.plots), 2)
            self.assertEqual(r2.plots[0].content_base64, p.content_base64)
            r3 = s.run("print('no plot')")
            self.assertEqual((len(r3.plots), r3.stdout), (2, "no plot\n"))
            r4 = s.run(PLOT % 3, clear_plots=True)
            self.assertEqual(len(r4.plots), 1)
            self.assertNotEqual(r4.plots[0].content_base64, p.content_base64)

    def test_plot_format_is_a_file_type(self):
        from sandcell import FileType
        with ArtifactSandboxSession(lang="python") as s, tempfile.TemporaryDirectory() as d:
            plot = s.run(PLOT % 1).plots[0]
            # as llm-sandbox's users save plots
            path = os.path.join(d, "plot.%s" % plot.format.value)
            with open(path, "wb") as f:
                f.write(base64.b64decode(plot.content_base64))
            self.assertEqual(os.path.basename(path), "plot.png")
            self.assertIs(plot.format, FileType.PNG)
            self.assertEqual(plot.format, "png")
            self.assertEqual("%s" % plot.format, "png")

    def test_two_figures_in_one_run_and_streaming(self):
        code = ("import matplotlib.pyplot as plt\nprint('a', flush=True)\n"
                "plt.figure(); plt.plot([1]); plt.figure(); plt.plot([2]); plt.show()\nprint('b')\n")
        chunks = []
        with ArtifactSandboxSession() as s:
            r = s.run(code, on_stdout=chunks.append)
        self.assertEqual(len(r.plots), 2)
        self.assertEqual("".join(chunks), r.stdout)
        self.assertEqual(r.stdout, "a\nb\n")

    def test_code_that_selects_agg_itself(self):
        with ArtifactSandboxSession(lang="python") as s:
            r = s.run(AGG % 1)
            self.assertEqual((r.exit_code, len(r.plots)), (0, 1), r.stderr)
            self.assertEqual(r.plots[0].content[:8], PNG)
        with InteractiveSandboxSession() as s:
            r = s.run(AGG % 1)
            self.assertEqual((r.exit_code, len(r.plots)), (0, 1), r.stderr)

    def test_savefig_then_show_gives_both(self):
        # as llm-sandbox: the saved file and the shown figure (drawn on since)
        code = ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('a.png')\n"
                "plt.plot([2, 1])\nplt.show()\n")
        with ArtifactSandboxSession() as s:
            r = s.run(code)
        self.assertEqual(len(r.plots), 2, r.stderr)
        self.assertTrue(all(p.content[:8] == PNG for p in r.plots))
        self.assertNotEqual(r.plots[0].content_base64, r.plots[1].content_base64)


R_PLOTS = "plot(1:10)\nhist(c(1, 2, 2, 3, 3, 3))\ncat('drawn\\n')\n"
GGPLOT = ("library(ggplot2)\np <- ggplot(data.frame(x = 1:3, y = c(2, 1, 3)), aes(x, y)) + geom_point()\n"
          "print(p)\n")


class TestArtifactR(unittest.TestCase):
    def setUp(self):
        if "r" not in _util.languages():
            self.skipTest("no Rscript on this host (apt-get install r-base-core): R plots not tested")

    def test_base_graphics(self):
        with ArtifactSandboxSession(lang="r") as s:
            r = s.run(R_PLOTS)
            self.assertEqual((r.exit_code, r.stdout), (0, "drawn\n"), r.stderr)
            self.assertEqual(len(r.plots), 2)
            self.assertTrue(all(p.format == "png" and p.content[:8] == PNG for p in r.plots))
            self.assertGreater(r.plots[0].width, 0)
            # they accumulate as python's do
            self.assertEqual(len(s.run("plot(3:1)").plots), 3)
        with ArtifactSandboxSession(lang="R") as s:  # llm-sandbox's spelling works too
            self.assertEqual(len(s.run("plot(1)").plots), 1)

    def test_ggplot2_print(self):
        with ArtifactSandboxSession(lang="r") as s:
            has = s.run("cat(requireNamespace('ggplot2', quietly = TRUE))").stdout
            if has != "TRUE":
                self.skipTest("no ggplot2 in the cell's R (apt-get install r-cran-ggplot2)")
            r = s.run(GGPLOT)
            self.assertEqual(r.exit_code, 0, r.stderr)
            self.assertEqual([p.content[:8] for p in r.plots], [PNG])


class TestArtifactLanguages(unittest.TestCase):
    def test_plots_are_python_and_r_only(self):
        with self.assertRaises(LanguageNotSupportPlotError):
            ArtifactSandboxSession(lang="javascript")
        # without plotting another language runs
        if "javascript" in _util.languages():
            with ArtifactSandboxSession(lang="javascript", enable_plotting=False) as s:
                r = s.run("console.log(6 * 7)")
                self.assertEqual((r.stdout, r.plots), ("42\n", []))


class TestInteractive(unittest.TestCase):
    def test_state_is_kept(self):
        with InteractiveSandboxSession(lang="python") as s:
            self.assertEqual(s.run("import os\nx = 41\nprint(os.getcwd())").stdout, "/sandbox\n")
            self.assertEqual(s.run("x += 1\nprint(x)").stdout, "42\n")
            r = s.run("raise ValueError('boom')")
            self.assertNotEqual(r.exit_code, 0)
            self.assertIn("ValueError: boom", r.stderr)
            self.assertEqual(s.run("print(x)").stdout, "42\n")
            with self.assertRaises(SandboxTimeoutError):
                s.run("import time\ntime.sleep(60)", timeout=1)
            self.assertEqual(s.run("print(x)").stdout, "42\n")
            chunks = []
            r = s.run("for i in range(3): print(i, flush=True)", on_stdout=chunks.append)
            self.assertEqual(("".join(chunks), r.stdout), ("0\n1\n2\n", "0\n1\n2\n"))

    def test_interactive_plots(self):
        if not _util.host_python_has("matplotlib"):
            self.skipTest("no matplotlib")
        with InteractiveSandboxSession() as s:
            r = s.run(PLOT % 1)
            self.assertEqual(len(r.plots), 1)
            self.assertEqual(base64.b64decode(r.plots[0].content_base64)[:8], PNG)

    def test_magics_run_or_say_they_need_ipython(self):
        ipython = _util.host_python_has("IPython")
        with InteractiveSandboxSession(lang="python") as s:
            s.run("answer = 42")
            for magic in ("%who", "%timeit -n1 -r1 sum(range(10))", "%pip list", "!echo hi"):
                with self.subTest(magic=magic):
                    r = s.run(magic)
                    if ipython:
                        self.assertEqual(r.exit_code, 0, r.stderr)
                    else:
                        self.assertNotEqual(r.exit_code, 0)
                        self.assertIn("IPython", r.stderr)
                        self.assertIn(re.match(r"%\w*|!", magic).group(0), r.stderr)
            if ipython:
                self.assertIn("answer", s.run("%who").stdout)
            self.assertEqual(s.run("print(answer)").stdout, "42\n")

    def test_python_only(self):
        with self.assertRaises(LanguageNotSupportedError):
            InteractiveSandboxSession(lang="javascript")


if __name__ == "__main__":
    unittest.main()
