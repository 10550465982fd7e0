/* Private to runtime/: the wire format between a client (sandcell exec, cp,
 * ps, rm, the agent) and a long-lived cell's init, over the cell's unix
 * SOCK_SEQPACKET socket. One connection carries one request. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cell.h"

#define PROTO_MAX_REQ (128 * 1024) /* request header + strings */
#define PROTO_MAX_ARGS 4096
/* Every request carries the cell's token: PROTO_TOKEN_LEN random bytes
 * that create wrote, hex-encoded, to the 0600 file `token` in the cell's
 * state directory. Only its creator (and root) can read that file; the
 * peer's uid cannot tell host users apart when the cell's ids are a range
 * (everyone outside it is the overflow uid), the token can. */
#define PROTO_TOKEN_LEN 32

enum proto_req_kind {
	REQ_EXEC = 1,     /* fds: stdin, stdout, stderr */
	REQ_COPY_IN = 2,  /* fds: read end of a copy stream; path = destination */
	REQ_COPY_OUT = 3, /* fds: write end of a copy stream; path = source */
	REQ_INFO = 4,
	REQ_LAYER_OUT = 5, /* fds: write end for a tar of the writable layer */
	REQ_FILE_READ = 6,  /* fds: write end for a regular file's bytes; path */
	REQ_FILE_WRITE = 7, /* fds: read end of the new contents; path, flags */
	REQ_SET_MEMORY = 8, /* max_size = the memory limit (rlimit) of later commands */
	REQ_CONNECT = 9,    /* fds: a stream socket relayed to 127.0.0.1:max_size */
	REQ_STATE_FD = 10,  /* answered by RSP_EXIT carrying (SCM_RIGHTS) init's fd of the
			     * cell's writable state, for fork and checkpoint */
	REQ_PRESTART_END = 11, /* the pre-started interpreter, if any, is killed; RSP_EXIT */
	REQ_NAMESPACES = 12, /* answered by RSP_EXIT carrying init's user and network
			      * namespaces, for cell_renew */
};

/* proto_req.flags */
#define PROTO_FILE_CREATE 1u  /* FILE_WRITE: a new file (fails if the path exists), parents made */
#define PROTO_FILE_EXEC 4u    /* with PROTO_FILE_CREATE: mode 0755, not 0644 */
#define PROTO_FILE_REPLACE 8u /* with PROTO_FILE_CREATE: an existing file is replaced */
#define PROTO_COPY_AS_DEST 2u /* COPY_IN: the entry becomes path, even an existing directory */
#define PROTO_EXEC_USER 4u    /* EXEC: run as uid:gid, not the cell's default user */
#define PROTO_EXEC_PRESTARTED 8u /* EXEC: may run in a process of the cell's pre-started
				  * interpreter (runtime/zygote.c) */

struct proto_req {
	uint32_t kind;
	uint32_t argc;       /* EXEC: argv strings first in data */
	uint32_t envc;       /* then env strings (0: the cell's environment) */
	uint32_t flags;      /* PROTO_FILE_CREATE, PROTO_COPY_AS_DEST */
	uint64_t timeout_ms; /* 0: none (a positive timeout is at least 1) */
	uint64_t max_size;   /* COPY_*: bound on bytes copied */
	uint32_t data_len;   /* bytes of NUL-terminated strings after the header */
	uint32_t pad;
	uint8_t token[PROTO_TOKEN_LEN];
	uint32_t uid, gid;   /* EXEC with PROTO_EXEC_USER: ids inside the cell */
	/* data: argv[argc], env[envc], cwd-or-path (each NUL-terminated) */
};

enum proto_rsp_kind {
	RSP_EXIT = 1,  /* status = wait status of the command or worker */
	RSP_ERROR = 2, /* text says what failed; the request did not run */
	RSP_INFO = 3,
};

struct proto_rsp {
	uint32_t kind;
	int32_t status;
	uint32_t timed_out;
	uint32_t nprocs; /* INFO: processes in the cell */
	uint32_t nexecs; /* INFO: requests in flight */
	uint32_t prestarted; /* EXIT of an EXEC: it ran in a pre-started interpreter's process */
	uint64_t cpu_us;
	uint64_t maxrss_kb;
	char text[448];
};

/* A request as init received it: the header, the strings (pointing into
 * the message) and the fds that came with it. */
struct proto_request {
	struct proto_req h;
	char *argv[PROTO_MAX_ARGS + 1];
	char *env[CELL_MAX_ENV + 1];
	const char *path; /* cwd for EXEC, the path for COPY_* */
	int fds[3];
	int nfds;
};

/* Decode one request message (header + strings, len bytes) into q->h,
 * q->argv, q->env and q->path; every string must be NUL-terminated inside
 * the message and the message must end with the last. 0, or -1 for a
 * malformed message. Pure (proto.c); the fds are the caller's. */
int rt_proto_decode_request(char *msg, size_t len, struct proto_request *q);

/* Whether two tokens are equal, in time that does not depend on where
 * they differ. Pure (proto.c). */
bool rt_proto_token_equal(const uint8_t *a, const uint8_t *b);

/* A timeout in seconds as the header's milliseconds: 0 for none (<= 0 or
 * not a number), a positive one rounded up to at least 1 ms, and capped
 * far beyond any real timeout instead of wrapping. Pure (proto.c). */
uint64_t rt_proto_timeout_ms(double seconds);
