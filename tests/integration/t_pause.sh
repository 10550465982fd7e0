#!/usr/bin/env bash
# sandcell pause / resume: a paused cell's processes stand still (a counter
# does not move), keep their memory and go on from where they were after
# resume; a paused cell runs no new command and is not forked, its files
# can still be copied out; pausing twice, resuming a running cell and an
# unknown cell are refused; rm removes a paused cell, leaving nothing.
. "$(dirname "$0")/../lib.sh"

c="pz$$"
state_of() { sc ps --json; jget "[x['state'] for x in d if x['name'] == '$1'][0]"; }
count() { rm -f "$T_DIR/cnt/$1"; sc cp "$c:/tmp/count" "$T_DIR/cnt/$1"; cat "$T_DIR/cnt/$1" 2>/dev/null; }
moved_past() { local n; n=$(count now); [ -n "$n" ] && [ "$n" -gt "$1" ]; }

sc create "$c"
check "a cell is made" expect_rc 0
mkdir -p "$T_DIR/cnt" && chmod 777 "$T_DIR/cnt" # the test user copies the count there
# a counter that lives in one shell's memory: after resume it must go on
# from its own count, not start again
as_user "$SC_BIN" exec "$c" -- sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done' \
	>/dev/null 2>&1 </dev/null &
BG=$!
check "the counter runs" wait_until moved_past 3
sc exec "$c" -- pgrep -o -f 'i=0; while'
pids_before=$OUT

sc pause "$c"
check "pause: exit 0" expect_rc 0
check "ps shows it paused" test "$(state_of "$c")" = paused
v1=$(count a)
sleep 2
v2=$(count b)
OUT="$v1 -> $v2" ERR=
check "a paused cell's counter stands still (2 s)" test -n "$v1" -a "$v1" = "$v2"
sc exec "$c" -- true
check "exec in a paused cell is refused, and says why" bash -c '[ '$RC' -eq 125 ] && grep -q "is paused" <<<"$0"' "$ERR"
sc fork "$c" "$c-kid"
check "fork of a paused cell is refused" bash -c '[ '$RC' -ne 0 ] && grep -q "is paused" <<<"$0"' "$ERR"
sc pause "$c"
check "pausing a paused cell is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "paused already" <<<"$0"' "$ERR"

sc resume "$c"
check "resume: exit 0" expect_rc 0
check "ps shows it running" test "$(state_of "$c")" = running
check "the counter goes on" wait_until moved_past "$v2"
v3=$(count c)
OUT="$v2 -> $v3" ERR=
check "from where it stood: its memory was kept" bash -c '[ "$0" -gt "$1" ] && [ "$0" -lt $(($1 + 200)) ]' "$v3" "$v2"
sc exec "$c" -- pgrep -o -f 'i=0; while'
check "the same process (the loop's shell)" out_is "$pids_before"
sc resume "$c"
check "resuming a running cell is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "not paused" <<<"$0"' "$ERR"
sc pause "no-such-$$"
check "an unknown cell is refused" expect_rc 125

sc pause "$c"
sc rm -f "$c"
check "rm -f removes a paused cell" expect_rc 0
wait "$BG" 2>/dev/null
check "no cell is left" no_cells
finish
