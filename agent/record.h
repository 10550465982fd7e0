/* What an episode leaves on disk: events.jsonl (appended line by line as
 * things happen) and trajectory.json (rewritten atomically after every
 * step). The API key is blanked out of everything written. */
#pragma once
#include <cjson/cJSON.h>

#include "../common/sc.h"

struct record {
	int events_fd;
	char dir[4096];
	const char *secret;
	cJSON *traj;  /* the trajectory document */
	cJSON *steps; /* its "steps" array */
};

/* Make dir (and parents); refuse one that already holds a run. */
int agent_record_open(struct record *r, const char *dir, const char *problem, const char *secret,
		struct sc_err *err);
/* Write ev (gets a "time" field) as one line; takes ownership of ev. */
void agent_record_event(struct record *r, cJSON *ev);
/* Set a top-level field of the trajectory (replacing it); takes value. */
void agent_record_set(struct record *r, const char *key, cJSON *value);
/* temp file + rename */
int agent_record_write_trajectory(struct record *r, struct sc_err *err);
void agent_record_close(struct record *r);

/* A default output directory name: runs/YYYYmmdd-HHMMSS-XXXXXX. */
int agent_record_default_dir(char *buf, size_t size, const char *id);
