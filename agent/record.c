#include "record.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "text.h"

int agent_record_default_dir(char *buf, size_t size, const char *id)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	return sc_path(buf, size, "runs/%s-%s", stamp, id);
}

int agent_record_open(struct record *r, const char *dir, const char *problem, const char *secret,
		struct sc_err *err)
{
	*r = (struct record){.events_fd = -1, .secret = secret};
	if (sc_path(r->dir, sizeof(r->dir), "%s", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "--out %.200s", dir);
	if (sc_mkdir_p(dir, 0755, err) < 0)
		return -1;
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/events.jsonl", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "--out %.200s", dir);
	r->events_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (r->events_fd < 0) {
		if (errno == EEXIST)
			return sc_fail(err, 0, "%s already holds a run (events.jsonl exists); "
					       "choose another --out", dir);
		return sc_fail(err, errno, "cannot create %s", path);
	}
	r->traj = cJSON_CreateObject();
	cJSON_AddStringToObject(r->traj, "problem_statement", problem);
	r->steps = cJSON_AddArrayToObject(r->traj, "steps");
	cJSON_AddObjectToObject(r->traj, "metadata");
	if (!r->steps)
		return sc_fail(err, ENOMEM, "trajectory");
	return 0;
}

/* Print v unformatted or indented, with the secret blanked out of every
 * string (on the values: an encoded key with a quote in it would escape a
 * search of the JSON text) and every string valid UTF-8. */
static char *render(struct record *r, cJSON *v, bool pretty)
{
	agent_json_scrub(v, r->secret);
	return pretty ? cJSON_Print(v) : cJSON_PrintUnformatted(v);
}

void agent_record_event(struct record *r, cJSON *ev)
{
	if (!ev)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	cJSON_AddNumberToObject(ev, "time", (double)ts.tv_sec + ts.tv_nsec / 1e9);
	_cleanup_free_ char *line = r->events_fd >= 0 ? render(r, ev, false) : NULL;
	cJSON_Delete(ev);
	if (!line)
		return;
	size_t len = strlen(line);
	line[len] = '\n'; /* the NUL becomes the newline; written as one write() */
	(void)sc_write_all(r->events_fd, line, len + 1);
}

void agent_record_set(struct record *r, const char *key, cJSON *value)
{
	if (!value)
		return;
	if (cJSON_GetObjectItemCaseSensitive(r->traj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(r->traj, key, value);
	else
		cJSON_AddItemToObject(r->traj, key, value);
}

int agent_record_write_trajectory(struct record *r, struct sc_err *err)
{
	char tmp[SC_PATH_BUF], final[SC_PATH_BUF];
	if (sc_path(tmp, sizeof(tmp), "%s/.trajectory.json.tmp", r->dir) < 0 ||
	    sc_path(final, sizeof(final), "%s/trajectory.json", r->dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "trajectory path");
	_cleanup_free_ char *text = render(r, r->traj, true);
	if (!text)
		return sc_fail(err, ENOMEM, "trajectory");
	_cleanup_fd_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sc_fail(err, errno, "cannot write %s", tmp);
	size_t len = strlen(text);
	text[len] = '\n';
	if (sc_write_all(fd, text, len + 1) < 0)
		return sc_fail(err, errno, "cannot write %s", tmp);
	if (rename(tmp, final) < 0)
		return sc_fail(err, errno, "cannot rename %s to %s", tmp, final);
	return 0;
}

void agent_record_close(struct record *r)
{
	sc_closep(&r->events_fd);
	r->events_fd = -1;
	cJSON_Delete(r->traj);
	r->traj = NULL;
	r->steps = NULL;
}
