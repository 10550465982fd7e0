# python: the LLM-in-Sandbox environment. Debian 12 (bookworm) with python3
# and its scientific stack from Debian's archive (no PyPI needed): numpy,
# scipy, sympy, matplotlib (Agg backend), mpmath, pandas, chardet, ipython3,
# pip, plus git, curl, wget, ca-certificates and build-essential. Cells
# start in /testbed. pip may install into the system (the cell is the
# sandbox): PIP_BREAK_SYSTEM_PACKAGES=1.
. "$SANDCELL_RECIPE_DIR/lib.sh"

pkgs=python3,python3-pip,python3-venv,python3-dev,python3-numpy,python3-scipy,python3-sympy
pkgs=$pkgs,python3-matplotlib,python3-mpmath,python3-pandas,python3-chardet,ipython3
pkgs=$pkgs,git,curl,wget,ca-certificates,build-essential,procps,less,nano,unzip,xz-utils

sc_code_image "$pkgs"
