# code: the languages of `sandcell code` (docs/code.md) from Debian 12
# (bookworm) packages: python3 with numpy, scipy, sympy, pandas,
# matplotlib, plotly, ipython3 and pip; node, npm and TypeScript (tsc);
# OpenJDK 17 (headless); gcc and g++; Go; Rust; R with its recommended
# packages and ggplot2; Ruby; Perl, Lua, PHP, C# (Mono), D (gdc),
# Verilog (Icarus), Scala, Racket and Kotlin (scripts); pytest, JUnit 5
# and jest (from npm) for the test modes. (Every name checked with apt-cache show
# against Debian 12.) Cells start in
# /testbed. pip may install into the system (the cell is the sandbox).
# Not built by the test suite (several GB; the host image's toolchains are
# what the tests use).
. "$SANDCELL_RECIPE_DIR/lib.sh"

pkgs=python3,python3-pip,python3-venv,python3-numpy,python3-scipy,python3-sympy
pkgs=$pkgs,python3-matplotlib,python3-pandas,python3-plotly,ipython3
pkgs=$pkgs,nodejs,npm,node-typescript,openjdk-17-jdk-headless,build-essential,golang-go,rustc
pkgs=$pkgs,r-base-core,r-recommended,r-cran-ggplot2,ruby
pkgs=$pkgs,perl,lua5.4,php-cli,mono-mcs,mono-runtime,gdc,iverilog,python3-pytest,junit5,libjavatuples-java
pkgs=$pkgs,scala,racket,kotlin,lua-unit,libtest-deep-perl,libdata-compare-perl,node-lodash
pkgs=$pkgs,golang-github-stretchr-testify-dev
pkgs=$pkgs,git,curl,ca-certificates,procps,less,unzip,xz-utils

# jest is not installable from Debian 12: npm's (lib.sh's sc_jest_hooks)
h1=$(sc_jest_hooks | sed -n 1p) h2=$(sc_jest_hooks | sed -n 2p) h3=$(sc_jest_hooks | sed -n 3p)
sc_code_image "$pkgs" "$h1" "$h2" "$h3"
