#!/usr/bin/env bash
# POST /run_jupyter: a real `sandcell serve` on 127.0.0.1 (port from
# --port-file) and a real HTTP client (jupyter_client.py, urllib): cells in
# one kept Python session, each cell's stdout, stderr, display data and
# error in SandboxFusion's RunJupyterResponse shape; cell_timeout,
# total_timeout, files, fetch_files, memory_limit_MB; refused requests.
# ctest-timeout: 600
. "$(dirname "$0")/../lib.sh"

CLIENT="$T_DIR/jupyter_client.py"
cp "$(dirname "$0")/jupyter_client.py" "$CLIENT"
chmod 644 "$CLIENT"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"

as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --pool 2 >"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
check "the server writes its port" wait_until test -s "$T_WORK/port"
URL=http://127.0.0.1:$(cat "$T_WORK/port")

nb() { python3 "$CLIENT" "$URL" "$TOKEN" "$@"; }
check "one cell's stdout, the driver Finished" nb print
check "cells share one namespace; a last expression is display text/plain, not stdout" nb state
check "stderr, and an exception is the cell's error (ename, evalue, traceback); the next cells run" nb error
check "display() and _repr_html_: text/html beside text/plain, in order" nb display
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	check "a matplotlib figure shown is display image/png (PNG bytes), in its own cell only" nb plot
else
	echo "skip - matplotlib figures (no matplotlib in the cell's python3)"
fi
check "cell_timeout: the cell is interrupted (KeyboardInterrupt), Failed, TimeLimitExceeded" nb cell_timeout
check "total_timeout: Failed, TimeLimitExceeded, the cells so far" nb total_timeout
check "files (nested paths) in the notebook's directory; fetch_files back, missing ones left out" nb files
check "memory_limit_MB: a cell over it fails (MemoryError or a dead kernel), or SandboxError saying why" nb memory
check "refused: bad cells, kernel, fetch path, types, no token (401)" nb refused
check "UTF-8 output kept, invalid bytes replaced" nb unicode

kill -TERM "$SERVER"
check "the server exits on SIGTERM" wait_until bash -c '! kill -0 "$0" 2>/dev/null' "$SERVER"
check "... leaving no cell" wait_until no_cells
[ "$T_FAILS" -eq 0 ] || { echo "--- serve.err"; tail -20 "$T_WORK/serve.err"; }
finish
