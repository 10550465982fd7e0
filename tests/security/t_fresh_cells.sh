#!/usr/bin/env bash
# A cell a server hands out after a hostile program ran in the one before
# is indistinguishable from a fresh cell (issue #39): cell_recorder.py
# lists what a process in a cell can observe (files in every writable
# place, processes, SysV IPC, message queues, listening ports, abstract
# sockets, hostname, environment, limits, keys, its own credentials and
# mounts); cell_hostile.py tries to leave each of those behind. Through
# /run_code and through POST /cells + exec + DELETE, with a pool of one
# cell. The server reuses its cells (cell_renew): the cells handed out
# after the hostile run are the hostile program's own, renewed, which ps
# --json's names and "renewals" show. Their records must equal the record
# of a fresh cell, while the hostile program's record of its own cell
# must show its traces (so that the comparison can fail).
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

for f in cell_recorder.py cell_hostile.py fresh_cells.py; do
	cp "$(dirname "$0")/$f" "$T_WORK/"
	chmod 644 "$T_WORK/$f"
done
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
RECS=$(mktemp -d "$T_WORK/recs.XXXXXX")
chmod 777 "$RECS"

as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 1 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server starts" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")
drive() { python3 "$T_WORK/fresh_cells.py" "$URL" "$T_WORK/token" "$T_WORK" "$@"; }
export -f drive
# the hostile daemons' name: this run's own (the other variant may run
# beside this one), at most 15 bytes
HOSTILE_TAG=sch-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
export URL T_WORK HOSTILE_TAG

# The server's pool cells, "NAME RENEWALS NAME RENEWALS..." (ps --json).
# Reuse is on by default: a released cell is renewed (cell_renew) and
# handed out again under its name; a pool of one holds one cell, or two
# while /cells cells are kept (the pool refills when one is kept).
pool_cells() {
	as_user "$SC_BIN" ps --json | python3 -c '
import json, sys
cells = [c for c in json.load(sys.stdin) if c["name"].startswith("serve-")]
print(" ".join("%s %d" % (c["name"], c["renewals"]) for c in cells))'
}
# $1: the cells after the hostile run, $2: the same later; the same
# names (renewed, never replaced), none renewed fewer times, and one at
# least renewed at all.
renewed_not_replaced() {
	echo "after the hostile run: $1; later: $2"
	python3 - "$1" "$2" <<'PY'
import sys
a, b = (dict(zip(s.split()[::2], map(int, s.split()[1::2]))) for s in sys.argv[1:3])
sys.exit(0 if a and a.keys() == b.keys() and all(b[k] >= a[k] for k in a)
         and max(b.values()) > 0 else 1)
PY
}

for via in run-code cell; do
	check "$via: a fresh cell's record" drive "record-$via" "$RECS/fresh-$via.json"
	check "$via: a second fresh cell's record is the same (the record is stable)" \
		bash -c 'drive "record-$0" "$1" && drive same "$2" "$1"' \
		"$via" "$RECS/fresh2-$via.json" "$RECS/fresh-$via.json"
	check "$via: the hostile program runs" drive "hostile-$via" "$RECS/hostile-$via.json"
	held=$(pool_cells)
	for part in files processes sysvipc sockets; do
		check "$via: the recorder sees the hostile program's $part in its own cell" \
			drive differs "$RECS/fresh-$via.json" "$RECS/hostile-$via.json" "$part"
	done
	# the pool hands its cells out in turn: as many records as it
	# holds cells take the hostile program's own among them
	n=$(($(wc -w <<<"$held") / 2))
	check "$via: the pool holds a cell or two ($n)" test "$n" -ge 1 -a "$n" -le 2
	for i in $(seq 1 "$n"); do
		check "$via: the cell handed out next ($i of $n) records what a fresh cell does" \
			bash -c 'drive "record-$0" "$1" && drive same "$2" "$1"' \
			"$via" "$RECS/after-$via-$i.json" "$RECS/fresh-$via.json"
	done
	check "$via: ... and those were the cells the hostile program left, renewed" \
		renewed_not_replaced "$held" "$(pool_cells)"
done

kill -TERM "$SERVER"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }
check "SIGTERM: the server exits" wait_until gone_pid "$SERVER"
check "... leaving no cell" wait_until no_cells
check "... and no process of the hostile program's (named $HOSTILE_TAG)" \
	bash -c '! pgrep -x "$0" >/dev/null' "$HOSTILE_TAG"
finish
