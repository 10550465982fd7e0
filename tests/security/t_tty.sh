#!/usr/bin/env bash
# Interactive use (run -t, exec -i -t) gives the command a pty of the
# cell's own, relayed by sandcell: the user's terminal never enters the cell.
# Driven like a person at a terminal (tty_session.py: a fresh pty that is
# sandcell's controlling terminal, stdin, stdout and stderr).
#
#   own pty    in the cell, stdin/stdout/stderr are one pty of the cell's
#              devpts (`tty` names /dev/pts/N), not the user's terminal, and
#              the command's controlling terminal; typed input arrives; ^C
#              interrupts the command; the user's terminal mode is restored
#   no -t      a terminal on stdin is relayed: the cell reads a pipe that
#              sandcell fills with what is typed (tty_typed.py: a terminal
#              in its normal mode on stdin, the output to a pipe); typed
#              input arrives, ^D ends it, the command sees a pipe (not a
#              terminal, TIOCSTI on it fails), a command that exits without
#              reading does not wait for the terminal, and keys typed after
#              it are the user's again; one on stdout is written write-only
#              (the cell cannot read the keys through it); run and exec -i
#   winch      a window size change reaches the command (run -t, exec -t)
#   tiocsti    with a policy that lets TIOCSTI through (a control shows the
#              attack reaching the user's terminal from a host process),
#              TIOCSTI with or without -t pushes nothing into the terminal
. "$(dirname "$0")/../lib.sh"

build_attacks tiocsti
cp "$(dirname "$0")"/tty_{session,attack,winch,stdio,typed}.py "$T_DIR/"
cat >"$T_DIR/incell.py" <<'PY'
import os, sys
st = os.fstat(0)
def name():
    try:
        return os.ttyname(0)
    except OSError:
        return "unnamed"  # a pty of a devpts the cell cannot see
print("CELL-ISATTY:", os.isatty(0))
print("CELL-TTY:", name())
print("CELL-DEV: %d:%d" % (st.st_dev, st.st_rdev))
print("CELL-SAME-012:", all(os.path.samestat(st, os.fstat(k)) for k in (1, 2)))
print("CELL-CTTY:", os.tcgetpgrp(0) == os.getpgrp())
print("READY", flush=True)
print("GOT:", sys.stdin.readline().strip(), flush=True)
PY
chmod 644 "$T_DIR"/*.py

session() { # TIMEOUT INPUT CMD...: sets RC and OUT
	local o
	o=$(mktemp "$T_DIR/out.XXXXXX")
	chmod 666 "$o"
	as_user python3 "$T_DIR/tty_session.py" "$@" >"$o" 2>&1 </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=""
	rm -f "$o"
}
field() { printf '%s\n' "$OUT" | sed -n "s/^$1: //p" | head -1; }
own_pty_checks() { # WHAT NAMED
	check "$1: exits 0" expect_rc 0
	check "$1: the cell's stdin is a terminal" [ "$(field CELL-ISATTY)" = True ]
	if [ "$2" = named ]; then
		check "$1: a pty of the cell's devpts ($(field CELL-TTY))" \
			bash -c '[[ "$0" =~ ^/dev/pts/[0-9]+$ ]]' "$(field CELL-TTY)"
	fi
	check "$1: it is not the user's terminal ($(field CELL-DEV) vs $(field HOST-TTY-DEV))" \
		bash -c '[ -n "$0" ] && [ -n "$1" ] && [ "$0" != "$1" ]' "$(field CELL-DEV)" "$(field HOST-TTY-DEV)"
	check "$1: stdout and stderr are the same pty" [ "$(field CELL-SAME-012)" = True ]
	check "$1: it is the command's controlling terminal" [ "$(field CELL-CTTY)" = True ]
	check "$1: typed input arrives" [ "$(field GOT)" = hello ]
	check "$1: the user's terminal mode is restored" [ "$(field HOST-TTY-MODE-RESTORED)" = True ]
}

session 120 'hello\n' "$SC_BIN" run -t -v "$T_DIR/incell.py:/t/incell.py:ro" -- python3 /t/incell.py
own_pty_checks "run -t" named

# (READY comes from the process that then waits, by exec, in sleep: a ^C
# that lands while a shell forks would be a race of the test's own)
session 120 '\x03' "$SC_BIN" run -t -- sh -c 'sh -c "echo READY; exec sleep 600"; echo not-interrupted'
check "run -t: ^C interrupts the command (130)" expect_rc 130
[ "$RC" -eq 130 ] || printf '%s\n' "$OUT" | head -20
check "run -t: the command did not go on" bash -c '! grep -q not-interrupted <<<"$0"' "$OUT"
check "run -t: the mode is restored after ^C" [ "$(field HOST-TTY-MODE-RESTORED)" = True ]

# --- without -t, the user's terminal is not the cell's ---
# the default policy without its TIOCSTI rule (what the kernel then says
# is the fd's own answer)
sc policy show default
printf '%s' "$OUT" | python3 -c 'import json, sys
p = json.load(sys.stdin)
p["seccomp"]["rules"] = [r for r in p["seccomp"]["rules"] if "TIOCSTI" not in r.get("comment", "")]
json.dump(p, open(sys.argv[1], "w"))' "$T_DIR/tiocsti-ok.json"
chmod 644 "$T_DIR/tiocsti-ok.json"

typed() { # TIMEOUT INPUT CMD...: sets RC and OUT (tty_typed.py)
	local o
	o=$(mktemp "$T_DIR/out.XXXXXX")
	chmod 666 "$o"
	as_user python3 "$T_DIR/tty_typed.py" "$@" >"$o" 2>&1 </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=""
	rm -f "$o"
}
# nothing but what the test typed after the command had ended
keys_after_only() { printf '%s\n' "$OUT" | grep -qxF "HOST-TTY-INPUT: b'sc-after-exit\\n'"; }
typed_checks() { # WHAT SANDCELL-CMD...: stdin a terminal in its normal mode, no -t
	local what=$1
	shift
	typed 120 'hello typed\n' "$@" -- sh -c 'echo READY; read x; echo "got:$x"'
	check "$what, no -t: a typed line reaches the command" \
		bash -c '[ "$RC" = 0 ] && grep -qx "got:hello typed" <<<"$0"' "$OUT"
	check "$what, no -t: keys typed after the command ended are the user's" keys_after_only
	typed 120 '@line one\nline two\n\x04' "$@" -- sh -c 'cat; echo CAT-ENDED'
	check "$what, no -t: ^D ends cat" \
		bash -c '[ "$RC" = 0 ] && [ "$(printf "%s\n" "$0" | head -3)" = "$(printf "line one\nline two\nCAT-ENDED")" ]' "$OUT"
	typed 120 '@x\n' "$@" -- sh -c 'if [ -t 0 ]; then echo CELL-STDIN-TTY; else echo CELL-STDIN-NOT-TTY; fi; echo "CELL-FD0: $(readlink /proc/self/fd/0)"'
	check "$what, no -t: the command's stdin is not a terminal" out_has "^CELL-STDIN-NOT-TTY"
	check "$what, no -t: the command's stdin is a pipe ($(printf '%s\n' "$OUT" | sed -n 's/^CELL-FD0: //p'))" \
		out_has "^CELL-FD0: pipe:\["
	typed 120 '' "$@" -- sh -c 'exit 3'
	check "$what, no -t: a command that reads nothing ends without waiting for the terminal" expect_rc 3
	check "$what, no -t: and leaves the terminal to the user" keys_after_only
	typed 120 '' "$@" -- sh -c 'exec 3<&0; sleep 600 <&3 >/dev/null 2>&1 3<&- & exit 5'
	check "$what, no -t: a command that leaves a reader of its stdin behind ends" expect_rc 5
	check "$what, no -t: and leaves the terminal to the user, too" keys_after_only
}
tiocsti_fd0='import errno, fcntl, termios
try:
    for c in b"echo sc-pushed-through-fd0\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print("TIOCSTI-PUSHED")
except OSError as e:
    print("TIOCSTI-FAILED:", errno.errorcode[e.errno])'
tiocsti_checks() { # WHAT SANDCELL-CMD...
	local what=$1
	shift
	typed 120 '' "$@" -- python3 -c "$tiocsti_fd0"
	# ENOTTY: the fd's own answer (a terminal that is not ours says EPERM)
	check "$what, no -t: TIOCSTI on the command's stdin fails, not a terminal ($(printf '%s\n' "$OUT" | sed -n 's/^TIOCSTI-FAILED: //p'))" \
		bash -c '[ "$RC" = 0 ] && grep -qx "TIOCSTI-FAILED: ENOTTY" <<<"$0"' "$OUT"
	check "$what, no -t: nothing was pushed into the user's terminal" keys_after_only
}

stdio() { # TIMEOUT in|out CMD...: sets RC and OUT
	local o
	o=$(mktemp "$T_DIR/out.XXXXXX")
	chmod 666 "$o"
	as_user python3 "$T_DIR/tty_stdio.py" "$@" >"$o" 2>&1
	RC=$?
	OUT=$(cat "$o")
	rm -f "$o"
}
keys_left() { printf '%s\n' "$OUT" | grep -qxF "HOST-TTY-INPUT: b'sc-typed-keys\\n'"; }
reads_stdin='if [ -t 0 ]; then echo STDIN-IS-TTY; else echo STDIN-NOT-TTY; fi; head -c 14; echo END'

name="ttycell$$"
sc create -v "$T_DIR/incell.py:/t/incell.py:ro" "$name"
check "create works" expect_rc 0
session 120 'hello\n' "$SC_BIN" exec -i -t "$name" -- python3 /t/incell.py
# (a rootless caller cannot open the running cell's devpts: its init is not
# dumpable; the pty is then the host's, still not the user's terminal)
own_pty_checks "exec -i -t" "$([ "$T_UID" -eq 0 ] && echo named)"
stdio 60 in "$SC_BIN" exec -i "$name" -- sh -c "$reads_stdin"
check "exec -i, stdin a terminal, no -t: the command's stdin is not a terminal" \
	bash -c '[ "$RC" = 0 ] && grep -q "^STDIN-NOT-TTY" <<<"$0" && grep -q "^END" <<<"$0"' "$OUT"
check "exec -i, stdin a terminal, no -t: the typed keys reach the command" \
	bash -c 'grep -qx "sc-typed-keys" <<<"$0"' "$OUT"
typed_checks "exec -i" "$SC_BIN" exec -i "$name"
sc create --policy "$T_DIR/tiocsti-ok.json" "$name-ti"
check "create with TIOCSTI allowed by the filter works" expect_rc 0
tiocsti_checks "exec -i" "$SC_BIN" exec -i "$name-ti"
sc rm -f "$name-ti"

# --- window size changes (SIGWINCH) reach the command ---
winch='import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
print("SIZE0 %d %d" % os.get_terminal_size(0)[::-1])
print("READY", flush=True)
signal.sigwait([signal.SIGWINCH])
print("SIZE1 %d %d" % os.get_terminal_size(0)[::-1], flush=True)'
winch_session() {
	local o
	o=$(mktemp "$T_DIR/out.XXXXXX")
	chmod 666 "$o"
	as_user python3 "$T_DIR/tty_winch.py" 60 "$@" >"$o" 2>&1 </dev/null
	RC=$?
	OUT=$(cat "$o")
	rm -f "$o"
}
winch_session "$SC_BIN" run -t -- python3 -c "$winch"
check "run -t: the command starts with the user's window size" out_has "^SIZE0 24 80"
check "run -t: a window size change reaches the command" \
	bash -c '[ "$RC" = 0 ] && grep -q "^SIZE1 33 111" <<<"$0"' "$OUT"
winch_session "$SC_BIN" exec -t "$name" -- python3 -c "$winch"
check "exec -t: the command starts with the user's window size" out_has "^SIZE0 24 80"
check "exec -t: a window size change reaches the command" \
	bash -c '[ "$RC" = 0 ] && grep -q "^SIZE1 33 111" <<<"$0"' "$OUT"
sc rm -f "$name"

stdio 60 in "$SC_BIN" run -- sh -c "$reads_stdin"
check "run, stdin a terminal, no -t: the cell's stdin is not a terminal" \
	bash -c '[ "$RC" = 0 ] && grep -q "^STDIN-NOT-TTY" <<<"$0" && grep -q "^END" <<<"$0"' "$OUT"
check "run, stdin a terminal, no -t: the typed keys reach the command" \
	bash -c 'grep -qx "sc-typed-keys" <<<"$0"' "$OUT"
typed_checks run "$SC_BIN" run
tiocsti_checks run "$SC_BIN" run --policy "$T_DIR/tiocsti-ok.json"
reads_stdout='if [ -t 1 ]; then echo OUT-IS-TTY; fi; echo written
if head -c 14 <&1 >&2 2>/dev/null; then echo READ-DONE >&2; else echo READ-REFUSED >&2; fi'
stdio 60 out "$SC_BIN" run -- sh -c "$reads_stdout"
check "run, stdout a terminal: the cell writes to it" \
	bash -c '[ "$RC" = 0 ] && grep -q "^OUT-IS-TTY" <<<"$0" && grep -q "^written" <<<"$0"' "$OUT"
check "run, stdout a terminal: the cell cannot read the typed keys through it" \
	bash -c 'grep -q "^READ-REFUSED" <<<"$0" && ! grep -q "^sc-typed" <<<"$0"' "$OUT"
check "run, stdout a terminal: the typed keys are still the user's" keys_left

sc run -t --json -- true
check "-t with --json is a usage error (125)" expect_rc 125

# --- TIOCSTI: unreachable under -t even where the filter would allow it ---
if [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 0)" = 1 ]; then
	payload="echo sc-tty-tiocsti-$$"
	attack() {
		local o
		o=$(mktemp "$T_DIR/out.XXXXXX")
		chmod 666 "$o"
		as_user python3 "$T_DIR/tty_attack.py" 60 "$@" >"$o" 2>&1
		RC=$?
		OUT=$(cat "$o")
		rm -f "$o"
	}
	attack "$ATTACKS/tiocsti" plain "$payload"
	check "tiocsti control: the attack reaches the terminal from a host process" \
		out_has "^HOST-TTY-INPUT: b'.*$payload"
	attack "$SC_BIN" run --policy "$T_DIR/tiocsti-ok.json" -v "$ATTACKS:/attacks:ro" -- /attacks/tiocsti plain "$payload"
	check "tiocsti without -t: nothing reaches the user's terminal (stdin is not it)" \
		out_has "^HOST-TTY-INPUT: b''$"
	attack "$SC_BIN" run -t --policy "$T_DIR/tiocsti-ok.json" -v "$ATTACKS:/attacks:ro" -- /attacks/tiocsti plain "$payload"
	check "tiocsti -t: nothing reaches the user's terminal" out_has "^HOST-TTY-INPUT: b''$"
else
	echo "# skip: tiocsti cases: dev.tty.legacy_tiocsti is off (they could not fail)"
fi

finish
