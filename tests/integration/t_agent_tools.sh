#!/usr/bin/env bash
# sandcell agent: the tools as the model sees them — every editor command
# and its errors, symlinks resolved inside the cell, bash output
# truncation, and a command that times out while the episode goes on.
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

# A host file the cell must not reach through a symlink.
export HOST_FILE="$T_WORK/host-only-$$.txt"
echo "host-side-content" >"$HOST_FILE"

# has N TEXT: observation N (in order; a turn with several tool calls
# gives several) contains TEXT.
has() {
	python3 -S -c 'import json, sys
t = json.load(open(sys.argv[1]))
sys.exit(0 if sys.argv[3] in t["steps"][int(sys.argv[2])]["observation"] else 1)' \
		"$RUN/trajectory.json" "$1" "$2"
}

agent editor editor -q "exercise the editor"
check "editor: the episode submits" expect_rc 0
check "editor: the final file is the result of every edit" \
	bash -c '[ "$0" = "$(printf "line1\ninserted\nLINE-TWO\nline3")" ]' "$OUT"
check "create: makes parent directories" has 0 "File created successfully at: /testbed/e/deep/a.txt"
check "create: refuses to overwrite" has 2 "already exists"
check "view: numbers lines like cat -n" has 3 "$(printf '     1\tline1\n     2\tline2\n     3\tline3')"
check "view_range [2, -1]: from line 2 to the end" has 4 "$(printf '     2\tline2\n     3\tline3')"
qtrue "view_range [2, -1]: not line 1" '"line1" not in obs[4]' 
check "view_range out of the file: an error naming the valid range" has 5 "from 1 to 3"
check "view of a directory lists two levels" has 6 "/testbed/e/deep/a.txt"
qtrue "view of a directory leaves hidden entries out" '".hidden" not in obs[6]'
check "view of a missing path" has 7 "does not exist"
check "a relative path is refused" has 8 "is not absolute"
check "str_replace: shows the edited snippet" has 9 "     2	LINE-TWO"
check "str_replace: no occurrence says how many it found" has 10 "found 0 occurrences"
check "str_replace: two occurrences say so and change nothing" has 12 "occurs 2 times"
check "insert: after line 1" has 13 "     2	inserted"
check "insert: past the end is an error with the range" has 14 "from 0 to 4"
check "an unknown editor command is an error" has 15 "unknown command 'delete'"
check "str_replace on a directory is an error" has 16 "is a directory"
check "a symlink is resolved inside the cell" has 18 "cell-side"
check "a symlink to a host path finds nothing" has 19 "does not exist"
check "str_replace writes through an in-cell symlink, inside the cell" has 21 "edited-through-link"
check "an unknown tool is an error observation" has 22 "unknown tool 'no_such_tool'"
check "the host file is untouched" bash -c '[ "$(cat "$0")" = host-side-content ]' "$HOST_FILE"
qtrue "editor errors go back to the model as tool results" \
	'any("already exists" in m.get("content", "") for m in log[1]["body"]["messages"] if m["role"] == "tool")'

# --- output truncation ---
export BIG_TEXT
BIG_TEXT=$(seq -f 'line %g of a long file' 1 2000)
agent trunc truncation -q "print a lot"
check "truncation: the episode submits" expect_rc 0
qtrue "past 80 lines: the first 40 and the last 40 with a note" \
	'"[stdout]\n1\n2\n" in obs[0] and "\n40\n[... 420 lines cut" in obs[0] and obs[0].endswith("\n461\n" + "\n".join(str(i) for i in range(462, 501))) and "\n41\n" not in obs[0]'
qtrue "a huge single line is cut in the middle and stderr is kept" \
	'"characters cut" in obs[1] and len(obs[1]) < 40000 and obs[1].rstrip().endswith("to-stderr")'
qtrue "editor output is capped at 10,000 characters with a note" \
	'"output cut at 10000 characters" in obs[3] and len(obs[3]) < 10300 and "line 1 of a long file" in obs[3]'
qtrue "binary output becomes valid text (NUL and bad bytes replaced)" '"bin\ufffdary\ufffd" in obs[4]'
qtrue "a command longer than an exec request (300 kB) still runs, with stdin empty" \
	'obs[5] == "Exit code: 0\n[stdout]\nlong-command-ok\nstdin-empty"'
qtrue "events.jsonl holds valid JSON lines" 'len(ev) > 5'

# --- a command that times out; the cell lives on ---
agent timeout timeout -q --command-timeout 5 "sleep too long"
check "timeout: the episode goes on and submits" expect_rc 0
check "timeout: later commands still run in the same cell" out_is still-alive
qtrue "timeout: the observation says it timed out, with the partial output" \
	'"timed out after 5 seconds" in obs[0] and obs[0].endswith("[stdout]\nbefore")'
qtrue "timeout: recorded in events" \
	'[e.get("timed_out") for e in ev if e["type"] == "tool_result"][0] is True'

# --- the episode timeout ---
agent eptimeout episode_timeout -q --episode-timeout 1 --command-timeout 5 "slow"
check "episode timeout: ends without submit (exit 2)" expect_rc 2
qtrue "episode timeout: status episode_timeout" 't["status"] == "episode_timeout"'

# --- a command that leaves a process in the background ---
agent background background -q --command-timeout 30 "start a server"
check "background: the episode is not held up by a background process" expect_rc 0
qtrue "background: its output arrives" 'obs[0] == "Exit code: 0\n[stdout]\nstarted"'

check "no cell is left behind" no_cells_left
finish
