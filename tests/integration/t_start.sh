#!/usr/bin/env bash
# sandcell start: a --persist cell whose init died starts again on its
# files, made as it was created (options given to start on top); a running
# cell, one without --persist and an unknown one are refused; a refused
# start loses nothing; rm leaves nothing behind.
. "$(dirname "$0")/../lib.sh"

c="st$$"
init_of() { sc ps --json; jget "[x['pid'] for x in d if x['name'] == '$1'][0]"; }
state_of() { sc ps --json; jget "[x['state'] for x in d if x['name'] == '$1'][0]"; }
is_gone() { [ "$(state_of "$1")" = gone ]; }
kill_init() { local pid; pid=$(init_of "$1"); kill -9 "$pid"; wait_until is_gone "$1"; }

sc create --persist --hostname sthost -e FOO=bar "$c"
sc exec "$c" -- sh -c 'echo kept > /testbed/f && mkdir -p /root/x && echo r > /root/x/y && rm /etc/hostname && mkfifo /tmp/q'
check "a --persist cell is made and written to" expect_rc 0
sc start "$c"
check "start of a running cell is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "is running" <<<"$0"' "$ERR"

check "its init is killed: ps shows it gone" kill_init "$c"
sc start "$c"
check "start starts it again and prints its name" bash -c '[ '$RC' -eq 0 ] && [ "$0" = "'$c'" ]' "$OUT"
st=$(state_of "$c")
check "ps shows it running" test "$st" = running
sc exec "$c" -- sh -c 'cat /testbed/f /root/x/y; test -p /tmp/q && echo fifo; test -e /etc/hostname || echo deleted'
check "its files are there, a deleted one still deleted" out_is "$(printf 'kept\nr\nfifo\ndeleted')"
sc exec "$c" -- sh -c 'hostname; echo $FOO'
check "with the options it was created with" out_is "$(printf 'sthost\nbar')"

kill_init "$c"
sc start --image no-such-image "$c"
check "a start that cannot make the cell is refused" expect_rc 125
check "and leaves it gone" is_gone "$c"
sc start -e FOO=baz "$c"
check "options given to start replace the kept ones" bash -c '[ '$RC' -eq 0 ]'
sc exec "$c" -- sh -c 'echo $FOO; hostname; cat /testbed/f'
check "... and the rest are kept, with the files" out_is "$(printf 'baz\nsthost\nkept')"

sc create "np$$"
kill_init "np$$"
sc start "np$$"
check "a cell made without --persist is refused, saying why" \
	bash -c '[ '$RC' -eq 125 ] && grep -q "not made with --persist" <<<"$0"' "$ERR"
sc start "nosuch$$"
check "an unknown cell is refused" expect_rc 125
sc start
check "start without a name is a usage error" expect_rc 125

sc rm -f "$c" "np$$"
check "rm removes them" expect_rc 0
check "no cell is left" no_cells
check "nothing is left under the state root or the persistent layers" \
	bash -c '[ -z "$(ls -A "$0/run" "$0/data/cells" 2>/dev/null | grep -v "^/\|^$")" ]' "$SANDCELL_ROOT"
finish
