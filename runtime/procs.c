/* A cell's processes from the host's /proc: each one's parent, state,
 * times and resident size, and which are below the cell's init (hold.c
 * stops them; usage.c counts what they use). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procs.h"

bool rt_proc_stat(pid_t pid, struct rt_proc_stat *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf) - 1, NULL);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	int pp;
	unsigned long long ut, stm, cut, cst, rss;
	long long skip;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads itreal
	 * starttime vsize rss */
	if (!p || sscanf(p + 1, " %c %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %llu %llu %llu %llu"
			 " %lld %lld %lld %lld %lld %lld %llu", &st->state, &pp, &skip, &skip, &skip,
			 &skip, &skip, &skip, &skip, &skip, &skip, &ut, &stm, &cut, &cst, &skip, &skip,
			 &skip, &skip, &skip, &skip, &rss) != 22)
		return false;
	st->ppid = pp;
	st->utime = ut;
	st->stime = stm;
	st->cutime = cut;
	st->cstime = cst;
	st->rss_pages = rss;
	return true;
}

struct proc_entry {
	pid_t pid, ppid;
};

ssize_t rt_procs_below(pid_t init, pid_t **out, size_t max, struct sc_err *err)
{
	*out = NULL;
	struct proc_entry *all = malloc(RT_PROCS_MAX * sizeof(*all));
	pid_t *below = malloc((max ? max : 1) * sizeof(*below));
	DIR *d = all && below ? opendir("/proc") : NULL;
	if (!d) {
		int e = all && below ? errno : ENOMEM;
		free(all);
		free(below);
		return sc_fail(err, e, "read /proc");
	}
	size_t n = 0, nb = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < RT_PROCS_MAX) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		struct rt_proc_stat st;
		if (*end || v <= 1 || !rt_proc_stat((pid_t)v, &st))
			continue;
		all[n++] = (struct proc_entry){(pid_t)v, st.ppid};
	}
	closedir(d);
	/* grown until a pass adds nothing (parents may come after their
	 * children in /proc's order) */
	for (bool grew = true; grew && nb < max;) {
		grew = false;
		for (size_t i = 0; i < n && nb < max; i++) {
			bool parent_below = all[i].ppid == init;
			for (size_t k = 0; !parent_below && k < nb; k++)
				parent_below = below[k] == all[i].ppid;
			if (!parent_below || all[i].pid == 0)
				continue;
			below[nb++] = all[i].pid;
			all[i].pid = 0; /* taken */
			grew = true;
		}
	}
	free(all);
	*out = below;
	return (ssize_t)nb;
}
