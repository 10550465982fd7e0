#!/usr/bin/env bash
# The reference harness (LLM-in-Sandbox) as users bring it: its YAML prompt
# configs and its flag spellings on `sandcell agent`, against the scripted
# LLM server; the configs are written here in the reference's format.
. "$(dirname "$0")/../lib.sh"
. "$SRCDIR/tests/fakes/agent_lib.sh"

W="$T_WORK/lis"
mkdir -p "$W/input"
echo "the secret is 77" >"$W/input/data.txt"
cat >"$W/prompt_config.yaml" <<'YAML'
system_prompt: |-
  You solve problems. Inputs are in {input_dir}; write the answer to {output_dir}/answer.txt.
  Keep \\boxed{{}} and {other} braces as they are.
instance_prompt: |-
  <problem>
  {problem_statement}
  </problem>
  Working directory: {working_dir}
working_dir: /work
input_dir: /work/in
output_dir: /work/out
YAML
cat >"$W/scen.json" <<'JSON'
[
  {"content": "Read the input.",
   "tool_calls": [{"name": "execute_bash", "arguments": {"command": "cat /work/in/data.txt"}}]},
  {"expect_in_request": ["the secret is 77"],
   "content": "Answer.",
   "tool_calls": [{"name": "execute_bash",
                   "arguments": {"command": "echo 77 > /work/out/answer.txt && echo art > /work/out/extra.txt"}}]},
  {"content": "Done.", "tool_calls": [{"name": "submit", "arguments": {}}]}
]
JSON
[ "$SANDCELL_TEST_AS" = nobody ] && chown -R 65534:65534 "$W"

# lis NAME ARGS...: `sandcell agent` with only the reference's spellings.
lis() {
	local name=$1
	shift
	start_fake "$W/scen.json"
	RUN="$T_WORK/$name"
	sc agent --llm_base_url "http://127.0.0.1:$FAKE_PORT/v1" --llm_name fake-model \
		--output_dir "$RUN" --retry-base-ms 10 "$@"
	stop_fake
}

lis cfg -q --prompt_config "$W/prompt_config.yaml" --input_dir "$W/input" --max_steps 5 \
	--query "What is the secret?"
check "a prompt-config episode exits 0" expect_rc 0
check "the answer is read from {output_dir}/answer.txt" out_is 77
qtrue "the system prompt is sent verbatim, placeholders replaced, other braces kept" \
	'log[0]["body"]["messages"][0] == {"role": "system", "content": "You solve problems. Inputs are in /work/in; write the answer to /work/out/answer.txt.\nKeep \\\\boxed{{}} and {other} braces as they are."}'
qtrue "the instance prompt is the first user message, verbatim" \
	'log[0]["body"]["messages"][1] == {"role": "user", "content": "<problem>\nWhat is the secret?\n</problem>\nWorking directory: /work"}'
qtrue "the input files were in input_dir (the model saw them)" 'obs[0].endswith("the secret is 77")'
qtrue "files left in output_dir are copied out" 'open(run + "/files/extra.txt").read() == "art\n"'
qtrue "the model name came from --llm_name" 'log[0]["body"]["model"] == "fake-model"'

# environment variables of the reference
start_fake "$W/scen.json"
RUN="$T_WORK/env"
T_EXTRA_ENV="LLM_NAME=env-model LLM_BASE_URL=http://127.0.0.1:$FAKE_PORT/v1 LLM_API_KEY=sk-lis-0123456789 LLM_TEMPERATURE=0.5" \
	sc agent -q --out "$RUN" --prompt-config "$W/prompt_config.yaml" --input "$W/input" "Secret?"
stop_fake
check "LLM_* environment: exits 0" expect_rc 0
qtrue "LLM_NAME, LLM_TEMPERATURE and LLM_API_KEY are used" \
	'log[0]["body"]["model"] == "env-model" and log[0]["body"]["temperature"] == 0.5 and log[0]["headers"].get("authorization", log[0]["headers"].get("Authorization")) == "Bearer sk-lis-0123456789"'

# refusals and one-line errors
sc agent --api_key sk-xyz --model m "p"
check "--api_key is refused (exit 125)" expect_rc 125
check "the refusal names LLM_API_KEY" bash -c 'printf "%s" "$0" | grep -q "LLM_API_KEY" && [ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ]' "$ERR"

bad() { # bad DESC FILE-CONTENT WORD
	printf '%s\n' "$2" >"$W/bad.yaml"
	sc agent --model m --prompt-config "$W/bad.yaml" "p"
	check "$1: exit 125" expect_rc 125
	check "$1: one line naming it" bash -c \
		'[ "$(printf "%s\n" "$0" | wc -l)" -eq 1 ] && printf "%s" "$0" | grep -q -- "$1"' "$ERR" "$3"
}
bad "no instance_prompt" 'system_prompt: hi' "no instance_prompt"
bad "a placeholder typo" $'system_prompt: "in {input_dri}"\ninstance_prompt: "{problem_statement}"' "{input_dri}"
bad "not YAML" $'system_prompt: [unclosed\ninstance_prompt: x' "not YAML"
bad "not a mapping" '- a list' "not a YAML mapping"
