/* The subcommand table: one line per command. Keep in README order. */
#pragma once
#include "cli.h"
#include "ports.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command COMMANDS[] = {
	{"run", cmd_run, "run a command in a one-shot cell"},
	{"create", cmd_create, "start a long-lived cell"},
	{"start", cmd_start, "start again a --persist cell whose init died"},
	{"pause", cmd_pause, "hold a long-lived cell's processes still"},
	{"resume", cmd_resume, "let a paused cell's processes go on"},
	{"exec", cmd_exec, "run a command in a long-lived cell"},
	{"cp", cmd_cp, "copy files into or out of a long-lived cell"},
	{"ps", cmd_ps, "list long-lived cells"},
	{"rm", cmd_rm, "stop and remove long-lived cells"},
	{"port", cmd_port, "list the ports published into a long-lived cell"},
	{"volume", cmd_volume, "create, list, inspect and remove named volumes"},
	{"commit", cmd_commit, "make an image from a cell's writable layer"},
	{"fork", cmd_fork, "copy a long-lived cell's files into new cells"},
	{"checkpoint", cmd_checkpoint, "save a long-lived cell's files; list, remove saves"},
	{"rollback", cmd_rollback, "restore a long-lived cell's files from a checkpoint"},
	{"gc", cmd_gc, "remove what crashed cells left behind"},
	{"policy", cmd_policy, "show a built-in policy or check a policy file"},
	{"image", cmd_image, "list, build, import, pull and remove images"},
	{"code", cmd_code, "run source code of a language in a cell"},
	{"agent", cmd_agent, "let a model solve a problem in a cell (LLM-in-Sandbox)"},
	{"batch", cmd_batch, "run and score many agent episodes from a task file"},
	{"serve", cmd_serve, "serve the HTTP API (SandboxFusion-compatible)"},
	{"mcp", cmd_mcp, "serve MCP tools on stdin/stdout (for MCP hosts)"},
	{"doctor", cmd_doctor, "check that this host can run cells"},
	{"version", cmd_version, "print the version"},
};
