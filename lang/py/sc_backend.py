# sandcell: a matplotlib backend (MPLBACKEND=module://sc_backend) that
# renders with Agg and writes figures as PNGs into $SANDCELL_PLOTS
# (sc_plots: plot-0001.png, ...), read back by the host: each savefig and
# each show() of a figure is a plot (as llm-sandbox does: a figure saved
# and then shown comes back twice), and a figure left open at the end is
# one when it was neither. sc_plots also imports this module and wraps
# pyplot.show when pyplot is imported, so that code which picks another
# backend itself (matplotlib.use("Agg")) still has its plots.
# Standard library and matplotlib only; written into the cell by lang/.
import atexit
import io
import weakref

import matplotlib.figure as _mfig
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

import sc_plots

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

_done = weakref.WeakSet()  # figures already a plot: not again at the end
_orig_savefig = _mfig.Figure.savefig


def emit(fig):
    """Write fig as the next PNG."""
    _done.add(fig)
    if sc_plots.count() >= sc_plots.MAX_PLOTS:
        sc_plots.write(b"", "png")  # dropped (plot-more): not worth rendering
        return
    buf = io.BytesIO()
    _orig_savefig(fig, buf, format="png")
    sc_plots.write(buf.getvalue(), "png")


def _savefig(self, *args, **kwargs):
    r = _orig_savefig(self, *args, **kwargs)
    try:
        emit(self)
    except Exception:
        pass
    return r


_mfig.Figure.savefig = _savefig


def _open_figures():
    from matplotlib._pylab_helpers import Gcf
    return [m.canvas.figure for m in Gcf.get_all_fig_managers()]


def flush(close=True):
    """At the end (of the program, of a session's run): emit every open
    pyplot figure that was neither shown nor saved, then close them all (as
    a notebook does)."""
    for fig in _open_figures():
        if fig not in _done:
            emit(fig)
    if close:
        import matplotlib.pyplot as plt
        plt.close("all")


def show(*args, **kwargs):
    """pyplot.show, whatever the backend: every open figure is a plot (also
    one saved before), then they are closed."""
    for fig in _open_figures():
        emit(fig)
    import matplotlib.pyplot as plt
    plt.close("all")


def _at_exit():
    try:
        flush(close=False)
    except Exception:
        pass


# pyplot registered its own exit hook (closing every figure) before this
# module was imported; hooks run last-registered first, so this one runs
# before it and figures left open at the end become plots.
atexit.register(_at_exit)
