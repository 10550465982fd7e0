# sandcell: the plot directory of a run or session ($SANDCELL_PLOTS), shared
# by the matplotlib backend (sc_backend) and the plotly renderer
# (sitecustomize): plots are numbered plot-0001.png, plot-0002.html, ... in
# the order they were made, whatever their format; the host reads them back
# in that order; past MAX_PLOTS a plot is dropped and plot-more tells the
# host so. Standard library only; written into the cell by lang/.
import os

MAX_PLOTS = 64
DIR = os.environ.get("SANDCELL_PLOTS", "/tmp/.sandcell/plots")
FORMATS = ("png", "html")


def exists(n):
    return any(os.path.exists(os.path.join(DIR, "plot-%04d.%s" % (n, f))) for f in FORMATS)


def count():
    n = 0
    while n < MAX_PLOTS and exists(n + 1):
        n += 1
    return n


def write(data, fmt):
    """Write bytes as the next plot of format fmt ("png" or "html")."""
    os.makedirs(DIR, mode=0o700, exist_ok=True)
    n = count() + 1
    if n > MAX_PLOTS:
        # dropped: the host says so (plots_truncated)
        open(os.path.join(DIR, "plot-more"), "wb").close()
        return None
    path = os.path.join(DIR, "plot-%04d.%s" % (n, fmt))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)
    return path


# ---- plotly: a renderer named "sandcell", made the default ----

def _register(renderers_mod):
    from plotly.io._base_renderers import ExternalRenderer

    class SandcellRenderer(ExternalRenderer):
        def render(self, fig_dict):
            import plotly.io as pio
            html = pio.to_html(fig_dict, include_plotlyjs="cdn", full_html=True,
                               validate=False)
            write(html.encode("utf-8"), "html")

    renderers_mod.renderers["sandcell"] = SandcellRenderer()
    renderers_mod.renderers.default = "sandcell"


class _Loader:
    """Runs the module, then then(module)."""

    def __init__(self, inner, then):
        self.inner, self.then = inner, then

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            self.then(module)
        except Exception:
            pass


def _hooked_spec(name, path, then):
    import importlib.machinery
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is not None and spec.loader is not None:
        spec.loader = _Loader(spec.loader, then)
    return spec


def plotly_renderers_spec(name, path):
    """The spec of plotly.io._renderers (sitecustomize's finder asks), with
    a loader that registers the renderer once the module has run."""
    return _hooked_spec(name, path, _register)


# ---- matplotlib: pyplot.show() captured whatever the backend ----

def _wrap_pyplot(plt):
    # code that picks a backend itself (matplotlib.use("Agg"), the usual
    # line of generated plotting code) never loads sc_backend through
    # MPLBACKEND: load it here (savefig and figures left open), and make
    # show() the one of sc_backend
    import functools
    import sc_backend

    @functools.wraps(plt.show)
    def show(*args, **kwargs):
        return sc_backend.show(*args, **kwargs)

    plt.show = show


def pyplot_spec(name, path):
    """The spec of matplotlib.pyplot (sitecustomize's finder asks), with a
    loader that wraps its show() once the module has run."""
    return _hooked_spec(name, path, _wrap_pyplot)
