# sandcell: a matplotlib backend (MPLBACKEND=module://sc_backend) that
# renders with Agg and writes every figure shown, saved or left open as a
# PNG into $SANDCELL_PLOTS (sc_plots: plot-0001.png, ...), read back by
# the host.
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

_done = weakref.WeakSet()
_orig_savefig = _mfig.Figure.savefig


def emit(fig):
    """Write fig as the next PNG (once per figure)."""
    if fig in _done:
        return
    _done.add(fig)
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


def flush(close=True):
    """Emit every open pyplot figure, then close them (as a notebook does)."""
    from matplotlib._pylab_helpers import Gcf
    for m in list(Gcf.get_all_fig_managers()):
        emit(m.canvas.figure)
    if close:
        import matplotlib.pyplot as plt
        plt.close("all")


def show(*args, **kwargs):
    flush(True)


def _at_exit():
    try:
        flush(close=False)
    except Exception:
        pass


# pyplot registered its own exit hook (closing every figure) before this
# module was imported; hooks run last-registered first, so this one runs
# before it and figures left open at the end become plots.
atexit.register(_at_exit)
