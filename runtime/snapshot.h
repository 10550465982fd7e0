/* Private to runtime/: shared read-only snapshot layers of cells' files
 * (fork, checkpoint). One lives in STATE_ROOT/.snapshots/ID/:
 *   tree/root        the host image's root directory of the cell (plain
 *                    files: that root is no overlay), empty otherwise
 *   tree/upper/NAME  each overlay's upper directory as the cell had it,
 *                    whiteouts and opaque markers included
 *   below            the id of the snapshot the cell itself stood on, if
 *                    any (a fork of a fork): a chain, top first
 *   users/WHO        who keeps it: "c@CELL" (a cell made from it),
 *                    "s@ID" (a snapshot above it), "k@CELL@TAG" (a
 *                    checkpoint)
 * It is removed when its last user goes (rt_snapshot_unref), and gc
 * removes what a killed sandcell left. Whoever builds or changes one holds
 * flock(LOCK_EX) on its directory; gc skips one it cannot lock. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc.h"

#define RT_SNAP_ID_LEN 33 /* 32 hex digits and a NUL */
#define RT_SNAP_MAX_DEPTH 16
#define RT_SNAP_WHO_LEN 160

/* A new, empty snapshot locked by the caller: its id and the lock fd (the
 * snapshot's directory, O_RDONLY; closing it releases the lock). */
int rt_snapshot_new(char id[RT_SNAP_ID_LEN], int *lock_fd, struct sc_err *err);
/* Copy a cell's writable state (the directory state_fd: the cell's tmpfs,
 * or a persistent cell's directory when persist) into the snapshot's
 * tree/. At most max_bytes of file data. */
int rt_snapshot_fill(const char *id, int state_fd, bool persist, uint64_t max_bytes,
		     struct sc_err *err);
/* Record that id stands on `below` (which gets the user "s@ID"). */
int rt_snapshot_set_below(const char *id, const char *below, struct sc_err *err);
/* Add or drop a user. Dropping the last one removes the snapshot, and its
 * own user in the snapshot below it. */
int rt_snapshot_ref(const char *id, const char *who, struct sc_err *err);
void rt_snapshot_unref(const char *id, const char *who);
/* The chain from id down (id first): at most RT_SNAP_MAX_DEPTH ids. */
int rt_snapshot_chain(const char *id, char ids[][RT_SNAP_ID_LEN], size_t *n, struct sc_err *err);
/* STATE_ROOT/.snapshots/ID/tree into buf. */
int rt_snapshot_tree_path(const char *id, char *buf, size_t size);
bool rt_snapshot_valid_id(const char *id);
/* The checkpoints of cell `name`: calls fn with each tag and its
 * snapshot id. */
int rt_snapshot_each_checkpoint(const char *name,
				void (*fn)(void *ctx, const char *tag, const char *id), void *ctx,
				struct sc_err *err);
/* Drop every checkpoint of cell `name` (when it is removed). */
void rt_snapshot_drop_checkpoints(const char *name);
/* Drop users that are gone (cells, snapshots, checkpoints of cells that
 * are no more) and remove snapshots nobody keeps. Returns how many were
 * removed. */
size_t rt_snapshot_gc(void);
