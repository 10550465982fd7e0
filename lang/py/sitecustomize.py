# sandcell: run at interpreter start (PYTHONPATH=/tmp/.sandcell/py:...).
# When the code imports plotly, its figures' show() writes the figure as
# HTML (plotly.js from its CDN) into the plot directory (sc_plots), which
# the host returns as a plot of format "html". The sitecustomize this one
# shadows (Debian's) still runs. Standard library only; written into the
# cell by lang/.
import importlib.machinery  # loaded by site already; importlib.abc would cost ~30 ms
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _register(renderers_mod):
    from plotly.io._base_renderers import ExternalRenderer

    class SandcellRenderer(ExternalRenderer):
        def render(self, fig_dict):
            import plotly.io as pio
            import sc_plots
            html = pio.to_html(fig_dict, include_plotlyjs="cdn", full_html=True,
                               validate=False)
            sc_plots.write(html.encode("utf-8"), "html")

    renderers_mod.renderers["sandcell"] = SandcellRenderer()
    renderers_mod.renderers.default = "sandcell"


class _Loader:
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            _register(module)
        except Exception:
            pass


class _Finder:
    def find_spec(self, name, path, target=None):
        if name != "plotly.io._renderers":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


if os.environ.get("SANDCELL_PLOTS"):
    sys.meta_path.insert(0, _Finder())


def _chain():
    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)


try:
    _chain()
except Exception:
    pass
