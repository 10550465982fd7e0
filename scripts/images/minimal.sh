# minimal: a small Debian 12 (bookworm) with python3, used by the test
# suite. The "essential" package set plus python3-minimal, without
# documentation (about 120 MB).
. "$SANDCELL_RECIPE_DIR/lib.sh"

sc_env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
sc_env LANG=C.UTF-8
sc_workdir /testbed
sc_cmd /bin/sh

sc_debian bookworm essential --include=python3-minimal "$SC_SMALL"
