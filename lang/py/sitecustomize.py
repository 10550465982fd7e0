# sandcell: run at interpreter start (PYTHONPATH=/tmp/.sandcell/py:...).
# Kept small, because runs set PYTHONDONTWRITEBYTECODE and so every start
# compiles it: with a plot directory ($SANDCELL_PLOTS), a finder waits for
# plotly's renderers module and leaves the rest to sc_plots (imported only
# then), which makes figures' show() write HTML plots. The sitecustomize
# this one shadows (the image's, e.g. Debian's) still runs. Standard
# library only; written into the cell by lang/.
import os
import sys


class _PlotlyHook:
    def find_spec(self, name, path, target=None):
        if name != "plotly.io._renderers":
            return None
        import sc_plots
        return sc_plots.plotly_renderers_spec(name, path)


if os.environ.get("SANDCELL_PLOTS"):
    sys.meta_path.insert(0, _PlotlyHook())


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    from importlib.machinery import PathFinder
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = PathFinder.find_spec(__name__, path)
    if spec is None or spec.loader is None:
        return
    mod = type(sys)(__name__)
    mod.__file__, mod.__spec__, mod.__loader__ = spec.origin, spec, spec.loader
    spec.loader.exec_module(mod)


try:
    _chain()
except Exception:
    pass
