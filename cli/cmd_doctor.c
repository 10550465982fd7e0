/* sandcell doctor [--json]: print the host checks of runtime's cell_doctor. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char DOCTOR_HELP[] =
	"usage: sandcell doctor [--json] [--root DIR]\n"
	"\n"
	"Check that this host can run cells: kernel, user namespaces, overlayfs in a\n"
	"user namespace, cgroup v2 delegation, seccomp, id ranges, state and data\n"
	"directories, Landlock, and the sysctls that restrict user namespaces\n"
	"(AppArmor, Debian). Each check tries the feature. One line per check (ok, warn or\n"
	"fail) with what to do; exits 0 when cells can run, 1 otherwise.\n"
	"\n"
	"Options:\n"
	"  --json      print one JSON object: {\"ok\", \"checks\": [{\"name\", \"status\",\n"
	"              \"detail\", \"fix\"}], \"limits\": {\"memory\", \"pids\", \"cpu\"}}, where\n"
	"              each limit is \"cgroup-v2\", \"cgroup-v1\" or \"rlimit\": how cells of\n"
	"              this caller hold it on this host (the \"limits\" line says it too)\n"
	"  --root DIR  the state and data root to check (or SANDCELL_ROOT)\n"
	"  -h, --help  this help\n";

static const char *status_name(enum cell_check_status s)
{
	switch (s) {
	case CELL_CHECK_OK:
		return "ok";
	case CELL_CHECK_WARN:
		return "warn";
	case CELL_CHECK_FAIL:
		break;
	}
	return "fail";
}

static int print_json(const struct cell_check *checks, size_t n, bool ok)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *arr = cJSON_CreateArray();
	if (!root || !arr)
		goto oom;
	cJSON_AddItemToObject(root, "ok", cJSON_CreateBool(ok));
	cJSON_AddItemToObject(root, "checks", arr);
	for (size_t i = 0; i < n; i++) {
		cJSON *c = cJSON_CreateObject();
		if (!c)
			goto oom;
		cJSON_AddItemToArray(arr, c);
		if (!cJSON_AddStringToObject(c, "name", checks[i].name) ||
		    !cJSON_AddStringToObject(c, "status", status_name(checks[i].status)) ||
		    !cJSON_AddStringToObject(c, "detail", checks[i].detail) ||
		    !cJSON_AddStringToObject(c, "fix", checks[i].fix))
			goto oom;
	}
	struct cell_limit_mechanisms m;
	cell_limit_mechanisms(&m);
	cJSON *lim = cJSON_AddObjectToObject(root, "limits");
	if (!lim || !cJSON_AddStringToObject(lim, "memory", cell_limit_how_name(m.memory)) ||
	    !cJSON_AddStringToObject(lim, "pids", cell_limit_how_name(m.pids)) ||
	    !cJSON_AddStringToObject(lim, "cpu", cell_limit_how_name(m.cpu)))
		goto oom;
	char *text = cJSON_PrintUnformatted(root);
	if (!text)
		goto oom;
	puts(text);
	cJSON_free(text);
	cJSON_Delete(root);
	return 0;
oom:
	cJSON_Delete(root);
	cli_error("doctor: out of memory");
	return -1;
}

int cmd_doctor(int argc, char **argv)
{
	bool json = false;
	int done = cli_plain_args(argc, argv, "doctor", DOCTOR_HELP, &json);
	if (done >= 0)
		return done;
	struct cell_check checks[CELL_DOCTOR_MAX];
	/* tests point this at a stand-in /proc/sys (t_landlock_doctor.sh) */
	size_t n = cell_doctor_at(checks, SC_ARRAY_LEN(checks),
				  getenv("SANDCELL_DOCTOR_SYSCTL_ROOT"));
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		if (checks[i].status == CELL_CHECK_FAIL)
			ok = false;
	if (json) {
		if (print_json(checks, n, ok) < 0)
			return 1;
	} else {
		for (size_t i = 0; i < n; i++) {
			printf("%-10s %-4s  %s", checks[i].name, status_name(checks[i].status),
			       checks[i].detail);
			if (checks[i].fix[0] && checks[i].status != CELL_CHECK_OK)
				printf(" -- fix: %s", checks[i].fix);
			putchar('\n');
		}
		printf("%s\n", ok ? "cells can run on this host" : "cells cannot run on this host");
	}
	fflush(stdout);
	return ok ? 0 : 1;
}
