/* Private to runtime/: published ports (ports.c). The host listeners
 * (cell_ports_listen, in the caller's network namespace) reach the cell's
 * child through the clone; after the cell's last wall is up (seccomp),
 * init forks the relay, which alone keeps them: it accepts on each and
 * connects to 127.0.0.1:cell_port in the cell's own network namespace. */
#pragma once
#include "internal.h"

/* Forks the relay (no-op without ports) and closes init's copies of the
 * listeners. The relay has init's walls (no capabilities, no_new_privs,
 * Landlock, seccomp) and ends with the cell's pid namespace. */
int rt_ports_start_relay(const struct cell_plan *plan, struct sc_err *err);

/* At most this many relayed connections at once; more wait in the
 * listener's backlog. Each holds two buffers of RT_PORTS_BUF bytes. */
#define RT_PORTS_MAX_CONNS 256
#define RT_PORTS_BUF (32 * 1024)
