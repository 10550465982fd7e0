# code: the languages of `sandcell code` (docs/code.md) from Debian 12
# (bookworm) packages: python3 with numpy, scipy, sympy, pandas,
# matplotlib, plotly, ipython3 and pip; node, npm and TypeScript (tsc);
# OpenJDK 17 (headless); gcc and g++; Go; Rust; R with its recommended
# packages and ggplot2; Ruby. (Every name checked with apt-cache show
# against Debian 12.) Cells start in
# /testbed. pip may install into the system (the cell is the sandbox).
# Not built by the test suite (several GB; the host image's toolchains are
# what the tests use).
. "$SANDCELL_RECIPE_DIR/lib.sh"

sc_env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
sc_env LANG=C.UTF-8
sc_env MPLBACKEND=Agg
sc_env PIP_BREAK_SYSTEM_PACKAGES=1
sc_env PIP_ROOT_USER_ACTION=ignore
sc_env PYTHONUNBUFFERED=1
sc_workdir /testbed
sc_cmd /bin/bash

pkgs=python3,python3-pip,python3-venv,python3-numpy,python3-scipy,python3-sympy
pkgs=$pkgs,python3-matplotlib,python3-pandas,python3-plotly,ipython3
pkgs=$pkgs,nodejs,npm,node-typescript,openjdk-17-jdk-headless,build-essential,golang-go,rustc
pkgs=$pkgs,r-base-core,r-recommended,r-cran-ggplot2,ruby
pkgs=$pkgs,git,curl,ca-certificates,procps,less,unzip,xz-utils

sc_debian bookworm apt --include="$pkgs" \
	--customize-hook='printf "backend: Agg\n" >"$1/etc/matplotlibrc"' \
	--customize-hook='mkdir -p "$1/testbed"' "$SC_SMALL"
