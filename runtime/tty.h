/* Private to runtime/: a pty of the cell's own for interactive commands
 * (run -t, exec -i -t). The cell gets the slave; the host side relays
 * between the caller's terminal and the master, so the caller's terminal
 * (and its TIOCSTI) never reaches the cell. */
#pragma once
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sc_err;

struct rt_tty {
	int master;      /* -1: no pty */
	int slave;       /* for the cell's 0/1/2; closed once the cell has it */
	int in, out;     /* the caller's side: input (-1: none) and output */
	/* sink, when set: the output goes to it instead of `out` */
	void (*sink)(void *ctx, const char *d, size_t n);
	void *sink_ctx;
	char pend[4096]; /* input read from `in`, not yet taken by the master */
	size_t pend_len, pend_off;
	bool in_eof, master_eof;
	int i_in, i_master; /* indexes in the last pollfd set, -1: not there */
};

void rt_tty_init(struct rt_tty *t);
/* Relay a master the cell opened in its own devpts (run -t). Takes it. */
int rt_tty_adopt(struct rt_tty *t, int master, int in, int out, struct sc_err *err);
/* exec -t: a pty in a running cell's own devpts, through its init's
 * /proc/PID/root (beneath it, no symlinks, and it must be a devpts ptmx:
 * the cell's root owns that tree), else one of the host's. */
int rt_tty_open_in(struct rt_tty *t, pid_t init_pid, int in, int out, struct sc_err *err);
/* Open a pty pair (the caller's window size, when `in` is a terminal). */
int rt_tty_open(struct rt_tty *t, int in, int out, struct sc_err *err);
/* Add this relay's fds to p (room for 2); returns how many. */
int rt_tty_poll_add(struct rt_tty *t, struct pollfd *p);
/* Move what poll reported. */
void rt_tty_poll_done(struct rt_tty *t, const struct pollfd *p);
/* The caller's window size changed (SIGWINCH): pass it on. */
void rt_tty_winch(struct rt_tty *t);
/* Read what is left on the master, waiting at most grace_ms for more
 * after the last byte (the command has ended). */
void rt_tty_drain(struct rt_tty *t, int grace_ms);
void rt_tty_close(struct rt_tty *t);

/* Without a pty of its own (no -t), a cell never gets the caller's
 * terminal as it is (its keys are the user's, and TIOCSTI, TIOCLINUX and
 * friends would work on it). A terminal on stdin is relayed (ttyin.c):
 * the cell reads a pipe, and the host side copies what is typed into it.
 * A terminal on stdout or stderr is opened again write-only, so that the
 * cell can write to it but not read what the user types. An open
 * directory is refused (its ".." would lead into the host's files). fds[k] < 0 are
 * left alone; the fds put in place are stored in ours[k] (to be closed by
 * the caller once the cell has them); `in` is the relay to run while the
 * command does (rt_tty_in_init'ed by the caller, idle when stdin is no
 * terminal). */
struct rt_tty_in {
	int term;        /* the caller's terminal, read side (-1: no relay) */
	bool own_term;   /* term was opened here (non-blocking), not borrowed */
	int wr;          /* the write end of the cell's stdin pipe */
	char buf[4096];  /* read from the terminal, not yet in the pipe */
	size_t len, off;
	int i_term, i_wr; /* indexes in the last pollfd set, -1: not there */
};

int rt_tty_guard_stdio(int fds[3], int ours[3], struct rt_tty_in *in, struct sc_err *err);

void rt_tty_in_init(struct rt_tty_in *r);
/* Add the relay's fds to p (room for 2); returns how many. */
int rt_tty_in_poll_add(struct rt_tty_in *r, struct pollfd *p);
/* Move what poll reported; at the terminal's EOF (^D) or when the cell's
 * side is gone, the relay ends (the cell sees EOF). */
void rt_tty_in_poll_done(struct rt_tty_in *r, const struct pollfd *p);
/* The command has ended (or we give up): stop reading the terminal now
 * and close the pipe. What was read and not taken is dropped. */
void rt_tty_in_close(struct rt_tty_in *r);
