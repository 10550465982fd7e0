/* sandcell doctor: the checks of what walls a cell in beyond namespaces
 * (Landlock) and of the sysctls by which a host refuses user namespaces
 * (doctor_walls.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "cell.h"
#include "doctor_check.h"

/* Try Landlock in a throwaway child: the ABI and what a cell enforces. */
void rt_doctor_landlock(struct cell_check *c);

/* The sysctls under sysctl_root (normally /proc/sys) that restrict user
 * namespaces, each with what to do. probe_ok: the live userns probe
 * worked for this caller (then a restriction is a warning: it holds for
 * other users or other binaries). */
void rt_doctor_userns_sysctls(struct cell_check *c, const char *sysctl_root, bool probe_ok);

/* What to do when user namespaces failed, from those sysctls; NULL when
 * none of them explains it. */
const char *rt_doctor_userns_fix(const char *sysctl_root, char *buf, size_t size);
