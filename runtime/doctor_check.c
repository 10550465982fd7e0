/* One line of doctor's report (doctor_check.h), for doctor.c and
 * doctor_walls.c alike. */
#include <stdarg.h>
#include <stdio.h>

#include "doctor_check.h"

void rt_doctor_set(struct cell_check *c, enum cell_check_status st, const char *fix,
		   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
	c->status = st;
}
