#!/usr/bin/env bash
# sandcell run --json: the result object tools parse.
. "$(dirname "$0")/../lib.sh"

sc run --json -- sh -c 'echo out; echo err >&2; exit 7'
check "--json exits with the command's status" expect_rc 7
check "exit_code" bash -c '[ "$(json_field exit_code)" = 7 ]'
check "stdout captured" bash -c '[ "$(json_field stdout | od -c | head -1)" = "$(printf "out\n" | od -c | head -1)" ]'
check "stderr captured" bash -c '[ "$(json_field stderr | od -c | head -1)" = "$(printf "err\n" | od -c | head -1)" ]'
check "signal is 0" bash -c '[ "$(json_field signal)" = 0 ]'
check "timed_out is false" bash -c '[ "$(json_field timed_out)" = false ]'
check "truncated is false" bash -c '[ "$(json_field truncated)" = false ]'
check "wall_s and cpu_s are numbers" bash -c 'printf "%s" "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); assert isinstance(d[\"wall_s\"], float) and d[\"wall_s\"] > 0 and isinstance(d[\"cpu_s\"], float)"'
export OUT

sc run --json --output-limit 1000 -- sh -c 'echo HEAD; seq 1 100000; echo TAIL'
export OUT
check "output past the limit is truncated" bash -c '[ "$(json_field truncated)" = true ]'
check "the head is kept" bash -c 'json_field stdout | head -1 | grep -qx HEAD'
check "the tail is kept" bash -c 'json_field stdout | tail -1 | grep -qx TAIL'
check "at most the limit is kept" bash -c '[ "$(json_field stdout | wc -c)" -le 1000 ]'

sc run --json -- sh -c 'printf "\001\377binary\"q\\\\"'
export OUT
check "binary and special bytes still make valid JSON" bash -c 'printf "%s" "$OUT" | python3 -c "import json,sys; json.load(sys.stdin)"'
# overlong "/", a surrogate, a code point above U+10FFFF: each is replaced
# by U+FFFD, so that a strict UTF-8 decoder takes the output
sc run --json -- sh -c 'printf "\300\257|\355\240\200|\364\220\200\200|\303\251ok"'
export OUT
check "ill-formed UTF-8 in --json output becomes U+FFFD" bash -c 'printf "%s" "$OUT" | /usr/bin/python3 -c "
import json, sys
d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\", \"strict\"))
parts = d[\"stdout\"].split(\"|\")
assert len(parts) == 4 and parts[3] == \"\u00e9ok\", parts
assert all(p and set(p) == {\"\ufffd\"} for p in parts[:3]), parts
"'

sc run --json -- sh -c 'kill -KILL $$'
export OUT
check "a signal is reported" bash -c '[ "$(json_field signal)" = 9 ] && [ "$(json_field exit_code)" = 137 ]'
check "exit status 137" expect_rc 137

sc run --json --timeout 1 -- sleep 30
export OUT
check "timeout: exit 124" expect_rc 124
check "timeout: timed_out true" bash -c '[ "$(json_field timed_out)" = true ]'

finish
