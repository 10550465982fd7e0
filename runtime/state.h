/* Private to runtime/: a long-lived cell's state directory
 * (<state root>/<name>/, mode 0700): `sock` (init's socket) and `info`
 * (key=value lines, mode 0600, written atomically once init is ready; its
 * `token` line is the secret every request carries, proto.h). Cells made
 * by earlier versions keep the token in a file `token` of its own. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cell.h"

struct cell_info {
	char name[64];
	pid_t pid;               /* host pid of init */
	uint64_t starttime;      /* its start time (clock ticks), against pid reuse */
	double created;          /* epoch seconds */
	char image[64];
	char cgroup[4096];       /* cgroup leaf or "" */
	char persist_dir[4096];  /* on-disk writable layer or "" */
	char snapshot[33];       /* the snapshot layer it was forked from, or "" */
	struct policy_limits limits;
	bool has_token;
	uint8_t token[32];       /* RT_TOKEN_LEN */
	struct cell_port ports[CELL_MAX_PORTS]; /* published, fd -1 */
	size_t nports;
	char volumes[CELL_MAX_VOLUMES][64]; /* named volumes bound in */
	size_t nvolumes;
	unsigned renewals;       /* cell_renew: how many times its init was renewed */
};

int rt_state_dir_of(const char *name, char *buf, size_t size, struct sc_err *err);
int rt_state_write_info(const char *dir, const struct cell_info *info, struct sc_err *err);
int rt_state_read_info(const char *dir, struct cell_info *info, struct sc_err *err);
/* The cell's token: 32 random bytes, made once (kept in info), or read
 * back from the `token` file of a cell made by an earlier version. */
#define RT_TOKEN_LEN 32
_Static_assert(sizeof(((struct cell_info *)0)->token) == RT_TOKEN_LEN, "token sizes");
int rt_state_make_token(uint8_t token[RT_TOKEN_LEN], struct sc_err *err);
int rt_state_read_token(const char *dir, uint8_t token[RT_TOKEN_LEN], struct sc_err *err);
bool rt_state_alive(const struct cell_info *info);
/* The "paused" mark in a cell's state directory (cell_pause): its path,
 * and whether it is there. */
int rt_state_paused_path(const char *dir, char *buf, size_t size);
bool rt_state_paused(const char *dir);
/* The register of inits (STATE_ROOT/.inits/PID-STARTTIME, holding the
 * cell's name): outside the cell's state directory, so that an init whose
 * directory was deleted by hand can still be found (cell_gc). Only the
 * caller writes it (the state root is the caller's, 0700); the cell never
 * sees it. rt_teardown_remove drops the entry. */
int rt_state_register_init(const char *dir, const struct cell_info *info, struct sc_err *err);
/* STATE_ROOT/.inits/PID-STARTTIME for the cell in dir (STATE_ROOT/NAME). */
int rt_state_init_entry(const char *dir, pid_t pid, uint64_t starttime, char *buf, size_t size);

/* teardown.c: kill the registered inits whose state directory is gone (or
 * holds another cell); drop entries of inits that ended. Returns inits
 * killed. */
size_t rt_teardown_gc_orphans(const char *state_root);
/* Remove the cell's cgroups, its register entry, its on-disk layer and
 * its state directory: everything the cell left on the host. */
int rt_teardown_remove(const char *dir, const struct cell_info *info, struct sc_err *err);
/* Its init's register entry only (a renewal: the init it names is gone). */
void rt_teardown_drop_init_entry(const char *dir, const struct cell_info *info);
