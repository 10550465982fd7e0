/* Private to runtime/: what /proc says of a host process. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

/* Start time of a host pid from /proc/PID/stat (clock ticks), 0 when gone
 * or a zombie: with the pid, it names a process against pid reuse. */
uint64_t rt_pid_starttime(pid_t pid);
