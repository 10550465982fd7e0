# sandcell: the plot directory of a run or session ($SANDCELL_PLOTS), shared
# by the matplotlib backend (sc_backend) and the plotly renderer
# (sitecustomize): plots are numbered plot-0001.png, plot-0002.html, ... in
# the order they were made, whatever their format; the host reads them back
# in that order. Standard library only; written into the cell by lang/.
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
        return None
    path = os.path.join(DIR, "plot-%04d.%s" % (n, fmt))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)
    return path
