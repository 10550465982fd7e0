#!/usr/bin/env bash
# sandcell run: isolation as a new user would check it.
. "$(dirname "$0")/../lib.sh"

# --- basics and exit statuses ---
sc run -- /bin/echo hello
check "runs a command and passes its stdout" expect_rc 0
check "stdout is the command's" out_is hello

sc run -- sh -c 'exit 3'
check "exit status of the command" expect_rc 3

sc run -- sh -c 'kill -TERM $$'
check "killed by SIGTERM gives 143" expect_rc 143
# a caller that ignores SIGPIPE (as init of a long-lived cell does) must
# not pass that on: the command starts with default dispositions
trap '' PIPE
sc run -- sh -c '{ yes; echo "yes=$?" >&2; } | head -n1 >/dev/null'
trap - PIPE
check "run: a writer to a closed pipe dies of SIGPIPE even when the caller ignores it" err_has "yes=141"
# the same for any signal the caller ignores (nohup's SIGHUP, a real-time
# one): the command's process ignores none
trap '' HUP USR1 RTMIN+3
sc run -- grep SigIgn /proc/self/status
trap - HUP USR1 RTMIN+3
check "run: the command ignores no signal even when the caller ignores some" out_is "$(printf 'SigIgn:\t0000000000000000')"

# the kernel's OOM killer takes a command first, never the cell's init
sc run -- sh -c 'echo "$(cat /proc/self/oom_score_adj) $(cat /proc/1/oom_score_adj)"'
check "a command is the OOM killer's first choice (1000), the cell's init is not (0)" out_is "1000 0"

sc run -- /nonexistent-command-xyz
check "command not found gives 127" expect_rc 127
check "not-found error names the command" err_has "nonexistent-command-xyz"

sc run -- /etc/hostname
check "not executable gives 126" expect_rc 126

sc run --bogus-option -- true
check "bad option gives 125" expect_rc 125
check "bad option error is one line" err_one_line
check "bad option error starts with sandcell:" err_has "^sandcell: "

sc run --memory lots -- true
check "bad size gives 125 and names the option" bash -c '[ '$RC' -eq 125 ] && grep -q -- "--memory" <<<"$0"' "$ERR"

sc run
check "no command gives 125" expect_rc 125

# --- stdin ---
o=$(printf 'from-stdin\n' | as_user "$SC_BIN" run -- cat)
RC=$? OUT=$o ERR=""
check "stdin reaches the command" out_is from-stdin

# --- processes, identity, hostname ---
sc run -- sh -c 'ls /proc | grep -E "^[0-9]+$" | wc -l'
check "the cell sees only its own processes" bash -c '[ "$0" -le 6 ]' "$OUT"

sc run -- sh -c 'grep ^PPid /proc/$$/status; grep ^PPid /proc/1/status'
check "the command's parent is PID 1 of the cell, whose parent is outside it" \
	out_is "$(printf 'PPid:\t1\nPPid:\t0')"

sc run -- hostname
check "default hostname is sandcell" out_is sandcell
sc run --hostname box1 -- hostname
check "--hostname sets it" out_is box1

sc run -- id -u
check "the command runs as root of the cell" out_is 0

# --- capabilities, no_new_privs, fds ---
sc run -- grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|CapInh|NoNewPrivs)' /proc/self/status
check "CapEff is 0" out_has "CapEff:	0000000000000000"
check "CapPrm is 0" out_has "CapPrm:	0000000000000000"
check "CapBnd is 0" out_has "CapBnd:	0000000000000000"
check "CapAmb is 0" out_has "CapAmb:	0000000000000000"
check "NoNewPrivs is 1" out_has "NoNewPrivs:	1"

# (no pipeline in the cell: a shell running one holds its pipe's fds)
o=$(as_user bash -c 'exec 5</etc/hostname 7>/dev/null; "$0" run -- sh -c "ls /proc/\$\$/fd"' "$SC_BIN" 2>&1)
RC=$? OUT=$o
check "only fds 0-2 are open in the cell (host had 5 and 7 open)" out_is "$(printf '0\n1\n2')"

# --- filesystem isolation ---
secret="sandcell-secret-$$"
if [ "$SANDCELL_TEST_AS" = root ]; then
	echo "$secret" >/root/$secret.txt
fi
sc run -- sh -c 'ls -A /root /home; cat /root/*.txt 2>/dev/null; true'
check "/root and /home are empty in the cell" bash -c '! grep -q "'$secret'" <<<"$0" && [ "$(grep -vc ":$" <<<"$0" | tr -d " ")" -le 1 ]' "$OUT"
rm -f /root/$secret.txt

# (for root callers host root is unmapped, so the host's file would be
# unreadable anyway: check the mask itself)
sc run -- sh -c 'for f in /etc/shadow /etc/gshadow; do stat -c "%n %F %t:%T" $f; cat $f >/dev/null 2>&1 && echo readable || echo refused; done'
check "/etc/shadow and /etc/gshadow are masked (a nodev /dev/null that cannot be opened)" \
	out_is "$(printf '/etc/shadow character special file 1:3\nrefused\n/etc/gshadow character special file 1:3\nrefused')"

mark="sc-write-$$"
sc run -- sh -c "touch /usr/$mark /etc/$mark /$mark /opt/$mark 2>/dev/null; echo \"data\" > /$mark; cat /$mark"
check "writes to / work inside the cell" out_is data
check "writes do not reach the host /usr, /etc, /, /opt" bash -c "[ ! -e /usr/$mark ] && [ ! -e /etc/$mark ] && [ ! -e /$mark ] && [ ! -e /opt/$mark ]"

sc run --disk 16M -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1; echo rc=$?'
check "--disk 16M makes a big write fail with ENOSPC" out_has "No space left on device"
check "the failed write reports a non-zero status" out_has "rc=1"

sc run -- sh -c 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
check "only lo exists" out_is lo
sc run -- sh -c 'grep -c . /proc/net/dev'
check "exactly one interface line" out_is 3

sc run -- sh -c 'cat /proc/kcore 2>/dev/null | head -c 10 | wc -c; ls /sys/firmware 2>/dev/null | wc -l'
check "/proc/kcore and /sys/firmware show nothing" out_is "$(printf '0\n0')"
# (the cell's root may not write it anyway: the mount must say why)
sc run -- sh -c 'echo 1 > /proc/sys/kernel/domainname && echo wrote || echo refused'
check "/proc/sys is read-only" bash -c '[ "$0" = refused ] && grep -q "Read-only file system" <<<"$1"' "$OUT" "$ERR"
sc run -- sh -c 'ls /dev | tr "\n" " "'
check "/dev is minimal" out_is "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "

# --- environment ---
T_EXTRA_ENV="LEAKY_VAR=should-not-pass" sc run -e FOO=bar -- env
check "the environment is clean (no host variables)" bash -c '! grep -q LEAKY_VAR <<<"$0"' "$OUT"
check "-e adds to it" out_has "^FOO=bar$"
check "PATH HOME TERM LANG are set" bash -c 'for k in PATH HOME TERM LANG; do grep -q "^$k=" <<<"$0" || exit 1; done' "$OUT"
check "nothing else is set (PWD aside)" bash -c '[ "$(grep -v -E "^(PATH|HOME|TERM|LANG|FOO|PWD|SHLVL|_)=" <<<"$0" | wc -l)" -eq 0 ]' "$OUT"

sc run -- pwd
check "default working directory is /testbed" out_is /testbed
sc run -w /tmp -- pwd
check "-w sets the working directory" out_is /tmp

# --- binds ---
bind_dir="$T_WORK/bind"
mkdir -p "$bind_dir"
echo host-data >"$bind_dir/in.txt"
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$bind_dir"
sc run -v "$bind_dir:/data:ro" -- sh -c 'cat /data/in.txt; touch /data/new 2>/dev/null && echo writable || echo readonly'
check "-v :ro shows the host files" out_has host-data
check "-v :ro is read-only" out_has readonly
check "nothing was written through a read-only bind" test ! -e "$bind_dir/new"

sc run -v "$bind_dir:/data" -- sh -c 'echo from-cell > /data/out.txt && cat /data/in.txt'
check "-v read-write: the cell's root can write the bind" expect_rc 0
check "the written file reaches the host" bash -c '[ "$(cat "$0/out.txt" 2>/dev/null)" = from-cell ]' "$bind_dir"
if [ "$SANDCELL_TEST_AS" = root ]; then
	check "files the cell writes through an idmapped bind belong to host root, not the cell's range" \
		bash -c '[ "$(stat -c %u "$0/out.txt")" = 0 ]' "$bind_dir"
fi

sc run -v "$bind_dir:/bin/data" -- true
check "a bind through a symlink in the cell (/bin -> usr/bin) is refused" expect_rc 125
check "the refusal says symlink" err_has symlink

sc run -v "/nonexistent-host-path:/data" -- true
check "a missing bind source is a one-line 125 error" bash -c '[ '$RC' -eq 125 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"

finish
