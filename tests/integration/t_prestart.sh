#!/usr/bin/env bash
# /run_code's pre-started interpreter (issue #39): with --prestart a
# server's pool cells each start python3 ahead, and a /run_code's Python
# program runs in a process cloned from it. Every probe
# (prestart_check.py) must answer exactly as through a server without
# it, where each
# program is a fresh `python3 main.py`: __main__, sys.argv, sys.path,
# sys.modules, the environment, stdio, limits, signals, tracebacks, exit
# codes, a signal's death, stdin, a file left open, atexit, __del__ and
# threads at exit, a timeout. The pre-started runs are counted in
# /metrics (the other server counts none), two runs draw different
# random numbers, and a cell handed out for POST /cells has no process
# but its own.
# ctest-timeout: 400
. "$(dirname "$0")/../lib.sh"

cp "$(dirname "$0")/prestart_check.py" "$T_WORK/"
chmod 644 "$T_WORK/prestart_check.py"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"
gone_pid() { ! kill -0 "$1" 2>/dev/null; }

as_user_exec "$SC_BIN" serve --ephemeral --prestart --listen 127.0.0.1:0 \
	--token-file "$T_WORK/token" --port-file "$T_WORK/port.pre" --pool 2 \
	>/dev/null 2>"$T_WORK/pre.err" &
PRE_PID=$!
as_user_exec "$SC_BIN" serve --ephemeral --listen 127.0.0.1:0 \
	--token-file "$T_WORK/token" --port-file "$T_WORK/port.fresh" --pool 2 \
	>/dev/null 2>"$T_WORK/fresh.err" &
FRESH_PID=$!
check "both servers start" wait_until bash -c "test -s '$T_WORK/port.pre' && test -s '$T_WORK/port.fresh'"
PRE=http://127.0.0.1:$(cat "$T_WORK/port.pre")
FRESH=http://127.0.0.1:$(cat "$T_WORK/port.fresh")
probe() { python3 "$T_WORK/prestart_check.py" "$PRE" "$FRESH" "$T_WORK/token" "$@"; }

n=0
for p in identity traceback syntax_error exit_code exit_message keyboard_interrupt killed \
	stdin unclosed_file shutdown_order timeout imports_work; do
	check "$p: the pre-started interpreter answers as a fresh python3" probe "$p"
	n=$((n + 1))
done
check "every one of the $n ran pre-started (/metrics)" probe metric "$PRE" "$n"
check "... and none on the server without --prestart" probe metric "$FRESH" 0
check "two pre-started runs draw different random numbers" probe random

check "a cell of POST /cells runs no pre-started interpreter (init and the lister only)" \
	probe cell_processes
kill -TERM "$PRE_PID" "$FRESH_PID"
check "SIGTERM: both servers exit" wait_until bash -c "! kill -0 $PRE_PID 2>/dev/null && ! kill -0 $FRESH_PID 2>/dev/null"
check "... leaving no cell" wait_until no_cells
finish
