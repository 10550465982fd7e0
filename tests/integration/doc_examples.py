#!/usr/bin/env python3
"""Extract the runnable shell examples of README.md and docs/*.md.

A fenced block is run by tests/integration/t_docs.sh when the line right
before its opening fence is a marker, an HTML comment (invisible on GitHub):

    <!-- test: run [exit=N] [as=root] [fixture=serve] [cont] -->

or the same comment spread over several lines, whose lines after the first
are hidden setup commands run (in the same shell) before the block, e.g.
files the example reads:

    <!-- test: run
    printf 'int main(void) { return 0; }\\n' > prog.cpp
    -->

Lines after a line `--- check` in the comment are hidden checks, run after
the block in its shell: each must succeed. `$DOC_OUT` is a file with what
the block printed (stdout and stderr), e.g. `grep -qx 12 "$DOC_OUT"`.

Parameters:
  exit=N         the block's expected status (default 0): that of its first
                 command that fails (as `set -e` would stop there), else 0.
                 A command line whose comment says `exit N` (`cmd  # traceback,
                 exit 1`) must end with N; with such comments, every other
                 command must succeed (and exit= is not used)
  as=root        only run when the test runs as root (`sudo` examples;
                 `sudo` is then a function that runs its arguments)
  fixture=serve  a `sandcell serve` on a free loopback port first, with
                 $TOKEN and $URL set as docs/api.md's quick start sets them
  fixture=llm    the scripted LLM server of tests/fakes replaying
                 scenarios/solve.json (it writes and runs a script, answers
                 5050 and submits) as $OPENAI_BASE_URL, which `sandcell
                 agent` and `batch` use when no --base-url is given
  cont           go on in the previous block's shell: same directory,
                 SANDCELL_ROOT, variables and fixtures (a block that uses
                 what an earlier one made)

In the examples `curl` fails (exit 22) on an HTTP error status, so a route
or body the server no longer takes fails its example.

Each chain of blocks (a block without `cont` and those that continue it)
runs as one bash script, as the test user, with `sandcell` on PATH being
the build under test, in a fresh directory that is also HOME, with its own
SANDCELL_ROOT. After the chain every cell must be gone.

Usage: doc_examples.py OUTDIR FILE.md...  writes OUTDIR/chain-NNN.sh and
prints one line per file: "FILE marked M unmarked U" (shell blocks: fences
labelled sh, bash, shell or console, or unlabelled ones whose first line
is a command: `$ `, `sandcell `, `sudo `, but not a synopsis with `[OPTIONS]`
or `[--flag]`), then one line per chain:
"chain NNN any|root FILE:LINE...". A `<!-- test:` comment that is not a
marker right before a fence is an error (exit 1), not a block left out.
"""
import os
import re
import shlex
import sys

MARK = re.compile(r"^<!--\s*test:\s*run\b(.*)$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
SHELL_INFO = {"sh", "bash", "shell", "console"}
KNOWN = {"exit", "as", "fixture", "cont"}
CHECK_LINE = "--- check"
EXIT_COMMENT = re.compile(r"\s#[^'\"]*\bexit (\d+)\b[^'\"]*$")


def parse_marker(lines, i):
    """The marker whose last line is lines[i] (the line before a fence):
    (params, setup lines) or None."""
    if not lines[i].rstrip().endswith("-->"):
        return None
    j = i
    while j >= 0 and not MARK.match(lines[j]):
        if j < i and ("<!--" in lines[j] or "-->" in lines[j]):
            return None
        j -= 1
    if j < 0:
        return None
    head = MARK.match(lines[j]).group(1)
    if j == i:
        head = head.rsplit("-->", 1)[0]
        setup = []
    else:
        setup = lines[j + 1:i]
        tail = lines[i].rstrip()[:-3].rstrip()
        if tail:
            setup.append(tail)
    checks = []
    if CHECK_LINE in [l.strip() for l in setup]:
        k = [l.strip() for l in setup].index(CHECK_LINE)
        setup, checks = setup[:k], setup[k + 1:]
    params = {}
    for word in head.split():
        k, _, v = word.partition("=")
        if k not in KNOWN:
            raise ValueError(f"unknown marker parameter {word!r}")
        params[k] = v or True
    return params, setup, checks


def blocks(path):
    """Yield (line, info, body, marker) for each fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(2), m.group(3), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        marker = None
        if start > 0:
            try:
                marker = parse_marker(lines, start - 1)
            except ValueError as e:
                sys.exit(f"{path}:{start}: {e}")
        yield start + 1, info, body, marker
        i += 1


def is_shell(info, body):
    if info in SHELL_INFO:
        return True
    if info:
        return False
    first = next((l.strip() for l in body if l.strip()), "")
    if first.startswith("sandcell ") and re.search(r"\[(-|[A-Z])", "\n".join(body)):
        return False  # a synopsis: sandcell run [OPTIONS] ...
    return first.startswith(("$ ", "sandcell ", "sudo "))


PRELUDE = r"""# generated by doc_examples.py
cd "$DOC_DIR" || exit 1
export HOME="$DOC_DIR"
__fails=0
__fixture_pids=()
__stop_fixtures() {
	local p
	for p in "${__fixture_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	__fixture_pids=()
}
__fixture_serve() {
	local port tok
	tok="$DOC_DIR/.fixture-token"
	head -c 24 /dev/urandom | base64 > "$tok"
	sandcell serve --listen 127.0.0.1:0 --port-file "$DOC_DIR/.fixture-port" \
		--token-file "$tok" --pool 1 >"$DOC_DIR/.fixture-serve.log" 2>&1 &
	__fixture_pids+=($!)
	local end=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$end" ]; do
		port=$(cat "$DOC_DIR/.fixture-port" 2>/dev/null)
		[ -n "$port" ] && command curl -sf "http://127.0.0.1:$port/v1/ping" >/dev/null && break
		sleep 0.1
	done
	TOKEN=$(cat "$tok")
	URL=http://127.0.0.1:$port
}
__fixture_llm() { # the scripted LLM of tests/fakes (solve.json) as $OPENAI_BASE_URL
	local port pf="$DOC_DIR/.fixture-llm-port"
	python3 -S "$DOC_FAKES/fake_llm.py" --scenario "$DOC_FAKES/scenarios/solve.json" \
		--port-file "$pf" --idle-exit 300 >/dev/null 2>"$DOC_DIR/.fixture-llm.log" </dev/null &
	__fixture_pids+=($!)
	local end=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$end" ] && [ ! -s "$pf" ]; do sleep 0.05; done
	port=$(cat "$pf" 2>/dev/null)
	export OPENAI_BASE_URL=http://127.0.0.1:$port/v1
}
if [ "$(id -u)" = 0 ]; then sudo() { "$@"; }; fi
# an HTTP error answer fails the example's curl (exit 22)
curl() { command curl --fail-with-body "$@"; }
# __block NAME EXIT LINES FILE: run FILE in this shell. Every command that
# fails is noted as LINE:STATUS; with LINES ("LINE:STATUS ..." from the
# block's `# ... exit N` comments) the failures must be exactly those, else
# the first failure's status (0 without one) must be EXIT.
__block() {
	local __s __fl="" __got __want __out
	__out="$DOC_DIR/.block.out"
	trap '__s=$?; __fl+=" $LINENO:$__s"' ERR
	source "$4" >"$__out" 2>&1
	trap - ERR
	__fl=${__fl# }
	if [ -n "$3" ]; then
		__got=$__fl __want=$3
	else
		__got=${__fl%% *} __got=${__got#*:} __got=${__got:-0} __want=$2
	fi
	local __bad=""
	if [ -s "$4.check" ]; then
		cd "$DOC_DIR"
		DOC_OUT=$__out
		local __c
		while IFS= read -r __c; do
			[ -n "$__c" ] || continue
			eval "$__c" >/dev/null 2>&1 || __bad+="${__bad:+; }$__c"
		done <"$4.check"
	fi
	if [ "$__got" = "$__want" ] && [ -z "$__bad" ]; then
		echo "ok   - $1 (failed: ${__fl:-none})"
	else
		if [ "$__got" != "$__want" ]; then
			echo "FAIL - $1: got ${__got:-no failure}, the marker or the comments say $__want"
		else
			echo "FAIL - $1: a check failed: $__bad"
		fi
		sed 's/^/#   /' "$__out" | tail -n 30
		__fails=$((__fails + 1))
	fi
	cd "$DOC_DIR"
}
"""

EPILOGUE = r"""
__stop_fixtures
left=$(sandcell ps --json 2>&1)
if [ "$left" != "[]" ]; then
	echo "FAIL - $DOC_CHAIN left cells behind: $left"
	__fails=$((__fails + 1))
	sandcell ps --json | python3 -c 'import json,sys; print(" ".join(c["name"] for c in json.load(sys.stdin)))' |
		xargs -r sandcell rm -f >/dev/null 2>&1
fi
exit $((__fails > 0))
"""


def main():
    out, files = sys.argv[1], sys.argv[2:]
    chains = []  # [(name, [(label, params, setup, body)])]
    for path in files:
        name = os.path.relpath(path, os.environ.get("SRCDIR", "."))
        marked = unmarked = 0
        for line, info, body, marker in blocks(path):
            label = f"{name}:{line}"
            if marker is None:
                if is_shell(info, body):
                    unmarked += 1
                continue
            marked += 1
            params, setup, checks = marker
            if params.get("cont"):
                if not chains or chains[-1][0] != name:
                    sys.exit(f"{label}: 'cont' without an earlier marked block in the file")
                chains[-1][1].append((label, params, setup, body, checks))
            else:
                chains.append((name, [(label, params, setup, body, checks)]))
        comments, fence = 0, None
        with open(path, encoding="utf-8") as f:
            for l in f:  # markers outside fenced blocks
                m = FENCE.match(l)
                if m and fence is None:
                    fence = m.group(2)
                elif fence and l.strip().startswith(fence):
                    fence = None
                elif fence is None and re.match(r"^<!--\s*test:", l):
                    comments += 1
        if comments != marked:
            sys.exit(f"{name}: {comments} '<!-- test:' comments but {marked} marked blocks: "
                     "a marker must be '<!-- test: run ...' on the line right before a fence")
        print(f"{name} marked {marked} unmarked {unmarked}")
    for n, (name, items) in enumerate(chains):
        d = os.path.join(out, f"chain-{n:03d}")
        os.makedirs(d)
        root_only = any(p.get("as") == "root" for _, p, _, _, _ in items)
        script = [PRELUDE, f"DOC_CHAIN={shlex.quote(items[0][0])}"]
        for k, (label, params, setup, body, checks) in enumerate(items):
            if params.get("fixture") == "serve":
                script.append("__fixture_serve")
            elif params.get("fixture") == "llm":
                script.append("__fixture_llm")
            elif params.get("fixture"):
                sys.exit(f"{label}: unknown fixture {params['fixture']!r}")
            bf = os.path.join(d, f"block-{k}.sh")
            with open(bf, "w") as f:
                f.write("\n".join(setup + body) + "\n")
            with open(bf + ".check", "w") as f:
                f.write("\n".join(checks) + "\n" if checks else "")
            # "cmd   # ..., exit N": that line's command must end with N
            lines = []
            for n_, l in enumerate(body, start=len(setup) + 1):
                m = EXIT_COMMENT.search(l)
                if m and m.group(1) != "0":
                    lines.append(f"{n_}:{m.group(1)}")
            script.append(f"__block {shlex.quote(label)} {int(params.get('exit', 0))} "
                          f"{shlex.quote(' '.join(lines))} {shlex.quote(bf)}")
        script.append(EPILOGUE)
        with open(d + ".sh", "w") as f:
            f.write("\n".join(script))
        labels = " ".join(label for label, _, _, _, _ in items)
        print(f"chain {n:03d} {'root' if root_only else 'any'} {labels}")


if __name__ == "__main__":
    main()
