# sandcell: run at interpreter start (PYTHONPATH=/tmp/.sandcell/py:...).
# Kept small, because runs set PYTHONDONTWRITEBYTECODE and so every start
# compiles it: with a plot directory ($SANDCELL_PLOTS), a finder waits for
# matplotlib.pyplot and plotly's renderers module and leaves the rest to
# sc_plots (imported only then), which makes pyplot.show() write PNG plots
# whatever the backend and plotly figures' show() HTML ones. The sitecustomize
# this one shadows (the image's, e.g. Debian's) still runs. Standard
# library only; written into the cell by lang/.
import os
import sys


class _PlotHook:
    def find_spec(self, name, path, target=None):
        if name == "matplotlib.pyplot":
            import sc_plots
            return sc_plots.pyplot_spec(name, path)
        if name == "plotly.io._renderers":
            import sc_plots
            return sc_plots.plotly_renderers_spec(name, path)
        return None


if os.environ.get("SANDCELL_PLOTS"):
    sys.meta_path.insert(0, _PlotHook())


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
