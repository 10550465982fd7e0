/* sandcell doctor: filling one check's line, shared by doctor.c and
 * doctor_walls.c (doctor_check.c). */
#pragma once
#include "cell.h"

/* Fill c: its status, the fix (NULL: none) and the formatted detail. */
void rt_doctor_set(struct cell_check *c, enum cell_check_status st, const char *fix,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
