#!/usr/bin/env bash
# Command-line limits go through the policy's validator: the same ranges,
# decimal numbers only, and one 125 line that names the option.
. "$(dirname "$0")/../lib.sh"

one_line_125() { # OPTION
	[ "$RC" -eq 125 ] && [ "$(grep -c . <<<"$ERR")" -eq 1 ] && grep -q "^sandcell: $1: expected" <<<"$ERR"
}
for bad in "--memory 1" "--memory 1K" "--memory 1e9" "--disk 1" "--disk 4K" "--disk 0x100000" \
	"--timeout 31536001" "--timeout 0x10" "--timeout 1e3" "--timeout inf" "--pids 4194305" \
	"--pids 0x10" "--cpus 0x1" "--output-limit 0" "--memory 17T"; do
	set -- $bad
	sc run "$1" "$2" -- true
	check "run $bad is a one-line 125 error naming the option" one_line_125 "$1"
done
sc run --timeout 0x10 -- true
check "hex is not read as a number" err_has "got '0x10'"
# the exec timeout has the same range and form
c="rng$$"
sc create "$c"
sc exec --timeout 31536001 "$c" -- true
check "exec --timeout past one year is refused" one_line_125 --timeout
sc exec --timeout 0x10 "$c" -- true
check "exec --timeout in hex is refused" one_line_125 --timeout
sc exec --timeout 31536000 "$c" -- true
check "exec --timeout of exactly one year is accepted" expect_rc 0
sc rm -f "$c"
# the bounds themselves are accepted
sc run --memory 4M --disk 1M --timeout 31536000 --cpus 0.01 --output-limit 1 -- true
check "every lower or upper bound is accepted" expect_rc 0
# hostnames: the command line takes what a policy takes, and refuses the same
P="$T_WORK/pol"
mkdir -p "$P"
chmod 755 "$P"
printf '{"hostname": "a_b"}\n' >"$P/under.json"
printf '{"hostname": "host-1.example"}\n' >"$P/ok.json"
chmod 644 "$P"/*.json
sc run --policy "$P/under.json" -- true
check "a policy refuses the hostname a_b" expect_rc 125
sc run --hostname a_b -- true
check "and so does --hostname" one_line_125 --hostname
sc run --policy "$P/ok.json" -- hostname
check "a policy takes host-1.example" out_is host-1.example
sc run --hostname host-1.example -- hostname
check "and so does --hostname" out_is host-1.example
finish
