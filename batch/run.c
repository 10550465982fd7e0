/* The batch runner. Cells come from a pool whose workers are forked before
 * any thread exists (DESIGN.md: no cell is cloned from a multi-threaded
 * process); a bounded set of threads, one per concurrent episode, each runs
 * agent_run on a cell it takes from the pool. An episode waiting on the
 * model sleeps in poll() inside libcurl and one waiting on a tool sleeps in
 * poll() on the cell's socket: an idle episode costs a sleeping thread (its
 * stack pages and no CPU), not a process; see docs/batch.md for the
 * measured cost. Every finished attempt is one line appended to
 * results.jsonl with a single write(), so a crash at any point loses at
 * most the attempts in flight, which a rerun runs again. */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/curl_dl.h"
#include "batch_priv.h"

#define THREAD_STACK (4U << 20)
#define CHECKER_OUTPUT (64U << 10)

struct attempt {
	size_t task;
	unsigned repeat;
	long group;    /* index in runner.groups, or -1 */
	unsigned slot; /* its place among the group's attempts to run */
};

/* A task's setup run once, for `n` attempts forked from its cell. */
enum group_state { GROUP_PENDING, GROUP_SETTING_UP, GROUP_READY, GROUP_FAILED };
struct group {
	size_t task;
	unsigned index, size; /* repeats [index * G, + size) */
	unsigned n;           /* of them to run */
	enum group_state state;
	char (*cells)[64];    /* per slot: its forked cell, "" once taken */
	char (*errors)[192];  /* why a slot has no cell */
	char error[SC_ERR_MAX]; /* the setup failed: every attempt fails so */
	double setup_s;
	char run[64];         /* which setup made the cells (its cell's name) */
};

struct runner {
	const struct batch_options *o;
	struct batch_tasks tasks;
	struct attempt *todo;
	size_t ntodo, next;
	char dir[4096];
	char bench_cell[300]; /* the benchmark folder in a cell: /testbed/NAME */

	struct cell_pool *pool;     /* for tasks without an image of their own */
	struct cell_spec pool_spec; /* the agent's, with AGENT_CELL_DIRS */
	struct batch_images images; /* the images tasks name, with their pools */
	long *task_image;           /* per task: its index in images, or -1 */
	struct group *groups;       /* guarded by mu */
	size_t ngroups;
	pthread_cond_t group_cv;    /* a group's setup ended */
	struct batch_forker *forker;
	pthread_mutex_t pool_mu;
	int results_fd;
	pthread_mutex_t write_mu;
	atomic_bool abort; /* stop: read by every episode and its libcurl */

	pthread_mutex_t mu; /* everything below */
	size_t total;       /* attempts of the selected tasks */
	size_t done;        /* with a result line, this run or before */
	size_t done_now;    /* this run */
	size_t running, errors, scored, exited;
	double score_sum;
	uint64_t tokens_in, tokens_out;
	double t0;
	char last_error[200];
};

/* ---- small helpers ---- */

static int write_file(const char *path, const char *data, size_t len)
{
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	return fd < 0 ? -1 : sc_write_all(fd, data, len);
}

/* A lock on the run directory for as long as we live. A POSIX record
 * lock belongs to this process alone: the pool's forked workers do not
 * hold it, so it is free the moment we die, even by SIGKILL. */
static int lock_dir(const char *dir, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/.lock", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sc_fail(err, errno, "cannot open %s", path);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		int e = errno;
		struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		fcntl(fd, F_GETLK, &who);
		close(fd);
		if (e == EAGAIN || e == EACCES)
			return sc_fail(err, 0, "another sandcell batch (pid %d) is running in %s; wait "
					       "for it or use another --out", (int)who.l_pid, dir);
		return sc_fail(err, e, "cannot lock %s", path);
	}
	return fd; /* kept open (and locked) until exit */
}

static void write_manifest(struct runner *r, size_t ntasks)
{
	const struct batch_options *o = r->o;
	char path[SC_PATH_BUF], tmp[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/batch.json", r->dir) < 0 ||
	    sc_path(tmp, sizeof(tmp), "%s/.batch.json.tmp", r->dir) < 0)
		return;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "tasks_file", o->tasks_path);
	cJSON_AddNumberToObject(j, "tasks", (double)ntasks);
	cJSON_AddNumberToObject(j, "repeat", o->repeat);
	cJSON_AddNumberToObject(j, "attempts", (double)r->total);
	if (o->group_size > 1)
		cJSON_AddNumberToObject(j, "group_size", o->group_size);
	if (o->shard_count) {
		char s[32];
		snprintf(s, sizeof(s), "%u/%u", o->shard_index, o->shard_count);
		cJSON_AddStringToObject(j, "shard", s);
	} else {
		cJSON_AddNullToObject(j, "shard");
	}
	cJSON_AddStringToObject(j, "mode", o->mode == BATCH_VANILLA ? "vanilla" : "sandbox");
	cJSON_AddStringToObject(j, "model", o->agent.model ? o->agent.model : "");
	cJSON_AddStringToObject(j, "scorer", batch_scorer_name(o->benchmark ? BATCH_SCORER_REWARD
							       : o->swe     ? BATCH_SCORER_SWE
									    : o->scorer.kind));
	if (o->benchmark)
		cJSON_AddStringToObject(j, "benchmark", o->benchmark);
	if (o->command_line)
		cJSON_AddStringToObject(j, "command_line", o->command_line);
	char *text = cJSON_Print(j);
	cJSON_Delete(j);
	if (text && write_file(tmp, text, strlen(text)) == 0)
		rename(tmp, path);
	free(text);
}

/* ---- one attempt ---- */

/* The pool of task t's cells (its image's, else the batch's). */
static struct cell_pool *pool_of(const struct runner *r, const struct batch_task *t)
{
	long i = t && r->task_image ? r->task_image[t - r->tasks.v] : -1;
	return i >= 0 ? r->images.v[i].pool : r->pool;
}

static int pool_take(struct runner *r, struct cell_pool *pool, struct cell **c, struct sc_err *err)
{
	if (!pool)
		return sc_fail(err, 0, "no cell pool");
	pthread_mutex_lock(&r->pool_mu);
	int rc = cell_pool_acquire(pool, c, err);
	pthread_mutex_unlock(&r->pool_mu);
	return rc;
}

static void pool_give(struct runner *r, struct cell_pool *pool, struct cell *c)
{
	pthread_mutex_lock(&r->pool_mu);
	cell_pool_release(pool, c);
	pthread_mutex_unlock(&r->pool_mu);
}

void batch_write_exec_log(const char *log, const struct cell_result *res, const char *note)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	char head[128];
	int n = snprintf(head, sizeof(head), "exit %d%s%s\n--- stdout\n", res->exit_code,
			 res->timed_out ? " (timed out)" : "", note);
	(void)sc_write_all(fd, head, (size_t)n);
	if (res->out)
		(void)sc_write_all(fd, res->out, res->out_len);
	(void)sc_write_all(fd, "\n--- stderr\n", 12);
	if (res->err)
		(void)sc_write_all(fd, res->err, res->err_len);
	close(fd);
}

/* The command scorer: a fresh cell with /testbed/answer.txt,
 * /testbed/expected.txt, the attempt's files in /testbed/output and the
 * scorer's files in /testbed/checker; the command runs in /testbed. */
static int score_command(struct runner *r, struct cell_pool *pool, const struct batch_scorer *s, const char *dir,
			 const char *answer, const char *expected, double *score, bool *timed_out,
			 struct sc_err *err)
{
	char stage[SC_PATH_BUF], a[SC_PATH_BUF], e[SC_PATH_BUF], files[SC_PATH_BUF], log[SC_PATH_BUF];
	if (sc_path(stage, sizeof(stage), "%s/.checker", dir) < 0 ||
	    sc_path(a, sizeof(a), "%s/answer.txt", stage) < 0 ||
	    sc_path(e, sizeof(e), "%s/expected.txt", stage) < 0 ||
	    sc_path(files, sizeof(files), "%s/files", dir) < 0 ||
	    sc_path(log, sizeof(log), "%s/checker.log", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "checker paths");
	sc_remove_tree(stage);
	if (mkdir(stage, 0755) < 0 || write_file(a, answer ? answer : "", answer ? strlen(answer) : 0) < 0 ||
	    write_file(e, expected ? expected : "", expected ? strlen(expected) : 0) < 0) {
		sc_fail(err, errno, "cannot stage the checker's files in %s", stage);
		sc_remove_tree(stage);
		return -1;
	}
	struct cell *c;
	if (pool_take(r, pool, &c, err) < 0) {
		sc_remove_tree(stage);
		return -1;
	}
	int rc = -1;
	struct stat st;
	if (cell_copy_in(c, a, "/testbed/answer.txt", BATCH_MAX_ANSWER * 2ULL, err) < 0 ||
	    cell_copy_in(c, e, "/testbed/expected.txt", BATCH_MAX_LINE, err) < 0)
		goto out;
	if (lstat(files, &st) == 0 && S_ISDIR(st.st_mode) &&
	    cell_copy_in_as(c, files, "/testbed/output", r->o->agent.files_limit, err) < 0)
		goto out;
	if (s->files && cell_copy_in(c, s->files, "/testbed/checker", CELL_DEFAULT_DISK, err) < 0)
		goto out;
	char *argv[] = {"/bin/sh", "-c", (char *)s->command, NULL};
	struct cell_exec_req req = {.argv = argv, .cwd = "/testbed", .timeout_s = s->timeout_s,
				    .output_limit = CHECKER_OUTPUT, .stdin_fd = -1, .stdout_fd = -1,
				    .stderr_fd = -1};
	struct cell_result res;
	if (cell_exec(c, &req, &res, err) < 0)
		goto out;
	*score = batch_score_from_checker(res.exit_code, res.out, res.out_len);
	if (res.timed_out) /* no verdict: not a wrong answer */
		*score = 0, *timed_out = true;
	char score_s[48];
	snprintf(score_s, sizeof(score_s), ", score %g", *score);
	batch_write_exec_log(log, &res, score_s);
	cell_result_free(&res);
	rc = 0;
out:
	pool_give(r, pool, c);
	sc_remove_tree(stage);
	return rc;
}

/* The benchmark's Python (mode "reward" or "prompt") in a fresh cell with
 * the benchmark folder copied to r->bench_cell: the request on stdin, the
 * verdict object in *out. Its output goes to log (when not NULL). */
static int bench_python(struct runner *r, const char *mode, const cJSON *request, const char *log,
			cJSON **out, struct sc_err *err)
{
	*out = NULL;
	_cleanup_free_ char *text = cJSON_PrintUnformatted(request);
	if (!text)
		return sc_fail(err, ENOMEM, "the helper's request");
	_cleanup_fd_ int in = sc_memfd_of("the helper's request", text, strlen(text), err);
	if (in < 0)
		return -1;
	struct cell *c;
	if (pool_take(r, r->pool, &c, err) < 0)
		return -1;
	int rc = -1;
	if (cell_copy_in(c, r->o->benchmark, r->bench_cell, CELL_DEFAULT_DISK, err) < 0)
		goto out;
	char *argv[] = {"python3", "-c", (char *)BATCH_BENCH_HELPER, (char *)mode, r->bench_cell,
			NULL};
	struct cell_exec_req req = {.argv = argv, .cwd = "/testbed", .timeout_s = r->o->scorer.timeout_s,
				    .output_limit = BATCH_MAX_LINE, .stdin_fd = in, .stdout_fd = -1,
				    .stderr_fd = -1};
	struct cell_result res;
	if (cell_exec(c, &req, &res, err) < 0)
		goto out;
	*out = batch_bench_parse_result(res.out, res.out_len);
	if (log)
		batch_write_exec_log(log, &res, "");
	if (!*out) {
		/* python3 missing, killed, timed out: the last stderr line says why */
		const char *e = res.err ? res.err : "";
		size_t n = res.err_len;
		while (n && (e[n - 1] == '\n' || e[n - 1] == ' '))
			n--;
		size_t b = n;
		while (b && e[b - 1] != '\n')
			b--;
		sc_fail(err, 0, "%s.py gave no verdict (exit %d%s)%s%.*s",
			strcmp(mode, "prompt") ? "reward" : "vanilla_llm_prompt", res.exit_code,
			res.timed_out ? ", timed out" : "", n > b ? ": " : "",
			(int)(n - b > 300 ? 300 : n - b), e + b);
	} else {
		rc = 0;
	}
	cell_result_free(&res);
out:
	pool_give(r, r->pool, c);
	return rc;
}

/* reward.py's compute_score(answer, ground_truth, **other fields). 0 with
 * *score set (a raising reward: 0, and why in reward_error); -1 when it
 * could not be run or not be loaded (err). */
static int score_reward(struct runner *r, const struct batch_task *t, const char *dir,
			const char *answer, double *score, char *reward_error, size_t size,
			struct sc_err *err)
{
	cJSON *req = cJSON_CreateObject(), *fields = cJSON_Duplicate(t->record, true);
	if (!req || !fields) {
		cJSON_Delete(req);
		cJSON_Delete(fields);
		return sc_fail(err, ENOMEM, "reward request");
	}
	cJSON *gt = cJSON_DetachItemFromObjectCaseSensitive(fields, "ground_truth");
	cJSON_AddStringToObject(req, "answer", answer ? answer : "");
	cJSON_AddItemToObject(req, "ground_truth", gt ? gt : cJSON_CreateNull());
	cJSON_AddItemToObject(req, "fields", fields);
	char log[SC_PATH_BUF];
	bool have_log = sc_path(log, sizeof(log), "%s/reward.log", dir) == 0;
	cJSON *v;
	int rc = bench_python(r, "reward", req, have_log ? log : NULL, &v, err);
	cJSON_Delete(req);
	if (rc < 0)
		return -1;
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "score");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error");
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(v, "load_error");
	*score = 0;
	if (cJSON_IsNumber(s) && isfinite(s->valuedouble)) {
		*score = s->valuedouble;
	} else if (cJSON_IsString(e)) {
		snprintf(reward_error, size, "compute_score raised %.900s", e->valuestring);
	} else {
		rc = sc_fail(err, 0, "reward.py could not be loaded: %.900s (does the image have what "
				     "it imports?)", cJSON_IsString(le) ? le->valuestring : "?");
	}
	cJSON_Delete(v);
	return rc;
}

/* vanilla_llm_prompt.py's create_prompt(problem), malloc'd; NULL with err. */
static char *vanilla_prompt(struct runner *r, const struct batch_task *t, const char *dir,
			    struct sc_err *err)
{
	cJSON *req = cJSON_CreateObject();
	if (!req || !cJSON_AddItemToObject(req, "problem", cJSON_Duplicate(t->record, true))) {
		cJSON_Delete(req);
		sc_fail(err, ENOMEM, "prompt request");
		return NULL;
	}
	char log[SC_PATH_BUF];
	bool have_log = sc_mkdir_p(dir, 0755, err) == 0 &&
			sc_path(log, sizeof(log), "%s/prompt.log", dir) == 0;
	cJSON *v;
	int rc = bench_python(r, "prompt", req, have_log ? log : NULL, &v, err);
	cJSON_Delete(req);
	if (rc < 0)
		return NULL;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "prompt");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error");
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(v, "load_error");
	char *out = NULL;
	if (cJSON_IsString(p) && strlen(p->valuestring) <= AGENT_MAX_PROBLEM) {
		if (!(out = strdup(p->valuestring)))
			sc_fail(err, ENOMEM, "prompt");
	} else if (cJSON_IsString(p)) {
		sc_fail(err, 0, "create_prompt returned more than %u bytes", AGENT_MAX_PROBLEM);
	} else {
		sc_fail(err, 0, "vanilla_llm_prompt.py: %s%.900s", cJSON_IsString(e) ? "create_prompt raised "
			: "could not be loaded: ", cJSON_IsString(e) ? e->valuestring
			: cJSON_IsString(le) ? le->valuestring : "?");
	}
	cJSON_Delete(v);
	return out;
}

/* What an attempt is run with, beside the options' agent config: the
 * problem as a benchmark gives it (its input_files staged, or vanilla's
 * create_prompt text). *error is set when it cannot be. */
struct attempt_run {
	struct agent_config cfg;
	char stage[SC_PATH_BUF];    /* staged input files, removed after the run */
	char *prompt;        /* create_prompt's text (vanilla benchmark) */
	char error[SC_ERR_MAX];
};

static void prepare_problem(struct runner *r, const struct attempt *a, const char *safe,
			    const char *dir, struct attempt_run *ar)
{
	const struct batch_options *o = r->o;
	const struct batch_task *t = &r->tasks.v[a->task];
	struct agent_config *cfg = &ar->cfg;
	struct sc_err err = {0};
	if (!t->record)
		return;
	cfg->input_dir = NULL;
	if (o->mode == BATCH_VANILLA) {
		cfg->vanilla_verbatim = true;
		char py[SC_PATH_BUF];
		struct stat st;
		if (sc_path(py, sizeof(py), "%s/vanilla_llm_prompt.py", o->benchmark) == 0 &&
		    stat(py, &st) == 0) {
			if (!(ar->prompt = vanilla_prompt(r, t, dir, &err)))
				snprintf(ar->error, sizeof(ar->error), "%.500s", err.msg);
			cfg->problem = ar->prompt;
		}
	} else if (t->input_files && t->input_files->child) {
		if (sc_path(ar->stage, sizeof(ar->stage), "%s/.inputs/%s.%u", r->dir, safe, a->repeat) < 0 ||
		    batch_bench_stage_inputs(t, ar->stage, &err) < 0)
			snprintf(ar->error, sizeof(ar->error), "input_files: %.480s", err.msg);
		else
			cfg->input_dir = ar->stage;
	}
}

/* The episode itself, in `own` (a group's forked cell, removed after it)
 * or a cell of the pool (vanilla: none). */
static void run_episode(struct runner *r, const struct batch_task *t, struct cell *own,
			struct attempt_run *ar, struct agent_result *res)
{
	struct cell_pool *pool = pool_of(r, t);
	bool vanilla = r->o->mode == BATCH_VANILLA;
	struct cell *cell = own;
	struct sc_err err = {0};
	if (!vanilla && !own && pool_take(r, pool, &cell, &err) < 0) {
		snprintf(ar->error, sizeof(ar->error), "no cell: %.480s", err.msg);
		return;
	}
	ar->cfg.cell = cell;
	if ((vanilla ? agent_run_vanilla : agent_run)(&ar->cfg, res, &err) < 0)
		snprintf(ar->error, sizeof(ar->error), "%s", err.msg);
	else if (res->status == AGENT_ERROR)
		snprintf(ar->error, sizeof(ar->error), "%s", res->error);
	/* the model's patch, before the cell goes */
	if (cell && t->swe && !ar->error[0] && batch_swe_capture_patch(cell, t, ar->cfg.out_dir, &err) < 0)
		snprintf(ar->error, sizeof(ar->error), "patch: %.480s", err.msg);
	if (own)
		cell_destroy(own, &err);
	else if (cell)
		pool_give(r, pool, cell);
}

/* ---- groups: a task's setup once, its attempts in forks ---- */

/* The group's setup, in a cell of the task's pool, forked into a cell
 * per attempt to run; its output in attempts/SAFE/setup-K.log. Only the
 * thread that set the group GROUP_SETTING_UP writes it meanwhile. */
static void setup_group(struct runner *r, struct group *g)
{
	const struct batch_task *t = &r->tasks.v[g->task];
	long img = r->task_image ? r->task_image[g->task] : -1;
	struct cell_pool *pool = pool_of(r, t);
	char safe[160], log[SC_PATH_BUF], dir[SC_PATH_BUF];
	struct sc_err err = {0};
	struct cell *parent;
	double t0 = sc_now();
	if (img >= 0 && r->images.v[img].error[0]) {
		snprintf(g->error, sizeof(g->error), "%.500s", r->images.v[img].error);
		return;
	}
	batch_safe_name(t->id, safe, sizeof(safe));
	bool have_log = sc_path(dir, sizeof(dir), "%s/attempts/%s", r->dir, safe) == 0 &&
			sc_path(log, sizeof(log), "%s/setup-%u.log", dir, g->index) == 0 &&
			sc_mkdir_p(dir, 0755, &err) == 0;
	if (pool_take(r, pool, &parent, &err) < 0) {
		snprintf(g->error, sizeof(g->error), "setup: no cell: %.480s", err.msg);
		return;
	}
	snprintf(g->run, sizeof(g->run), "%s", cell_name(parent));
	int rc = batch_setup_run(parent, t->setup, have_log ? log : NULL, &err);
	if (rc == 0 && batch_forker_fork(r->forker, (size_t)(img + 1), cell_name(parent), g->n,
					 g->cells, g->errors, &err) < 0) {
		sc_err_wrap(&err, "fork of the set-up cell");
		rc = -1;
	}
	pool_give(r, pool, parent);
	g->setup_s = sc_now() - t0;
	if (rc < 0)
		snprintf(g->error, sizeof(g->error), "setup: %.490s", err.msg);
}

/* The forked cell of attempt a: its group set up first, by the first of
 * its attempts to come (the others wait). -1 with error filled. */
static int group_cell(struct runner *r, const struct attempt *a, struct cell **c, char *error,
		      size_t size)
{
	struct group *g = &r->groups[a->group];
	char name[64] = "";
	pthread_mutex_lock(&r->mu);
	while (g->state == GROUP_SETTING_UP)
		pthread_cond_wait(&r->group_cv, &r->mu);
	if (g->state == GROUP_PENDING) {
		g->state = GROUP_SETTING_UP;
		pthread_mutex_unlock(&r->mu);
		setup_group(r, g);
		pthread_mutex_lock(&r->mu);
		g->state = g->error[0] ? GROUP_FAILED : GROUP_READY;
		pthread_cond_broadcast(&r->group_cv);
	}
	if (g->state == GROUP_FAILED)
		snprintf(error, size, "%s", g->error);
	else if (!g->cells[a->slot][0])
		snprintf(error, size, "fork of the set-up cell: %s", g->errors[a->slot]);
	snprintf(name, sizeof(name), "%s", g->cells[a->slot]);
	g->cells[a->slot][0] = '\0';
	pthread_mutex_unlock(&r->mu);
	if (!name[0])
		return -1;
	struct sc_err err = {0};
	if (cell_open(name, c, &err) < 0) {
		snprintf(error, size, "forked cell: %.480s", err.msg);
		cell_remove(name, true, &err);
		return -1;
	}
	return 0;
}

/* The task's scorer, with the options' command, files and timeout where
 * it names none. */
static struct batch_scorer scorer_of(const struct batch_options *o, const struct batch_task *t)
{
	struct batch_scorer s = t->has_scorer ? t->scorer : o->scorer;
	if (s.kind == BATCH_SCORER_SWE)
		s.timeout_s = o->scorer.timeout_s;
	if (s.kind == BATCH_SCORER_COMMAND) {
		if (!s.command)
			s.command = o->scorer.command;
		if (!s.files)
			s.files = o->scorer.files;
		if (!t->has_scorer || s.timeout_s <= 0)
			s.timeout_s = o->scorer.timeout_s;
	}
	return s;
}

/* The answer as the reference harness's reward reads answer.txt:
 * stripped (vanilla: the reply as it is). */
static char *reward_answer(const char *answer, bool vanilla)
{
	if (!answer || vanilla)
		return NULL;
	const char *b = answer, *e = answer + strlen(answer);
	while (*b && strchr(" \t\r\n\v\f", *b))
		b++;
	while (e > b && strchr(" \t\r\n\v\f", e[-1]))
		e--;
	return strndup(b, (size_t)(e - b));
}

struct attempt_score {
	bool scored, checker_timed_out;
	double score;
	char reward_error[1000];
	cJSON *tests; /* SWE: the tests' report */
};

/* SWE: the task's tests on the model's patch, in a fresh cell. */
static int score_swe(struct runner *r, const struct batch_task *t, const struct batch_scorer *s,
		     const char *dir, struct attempt_score *sc, struct sc_err *err)
{
	struct cell_pool *pool = pool_of(r, t);
	struct cell *c;
	bool resolved;
	if (pool_take(r, pool, &c, err) < 0)
		return -1;
	int rc = batch_swe_evaluate(c, t, s->timeout_s, dir, &sc->tests, &resolved,
				    &sc->checker_timed_out, err);
	pool_give(r, pool, c);
	sc->score = rc == 0 && resolved && !sc->checker_timed_out ? 1 : 0;
	return rc;
}

/* Score what the episode left; -1 when the run was interrupted meanwhile
 * (no result then). */
static int score_attempt(struct runner *r, const struct batch_task *t, const struct batch_scorer *s,
			 const char *dir, const struct agent_result *res, char *error, size_t error_size,
			 struct attempt_score *sc)
{
	bool external = s->kind == BATCH_SCORER_REWARD || s->kind == BATCH_SCORER_COMMAND ||
			s->kind == BATCH_SCORER_SWE;
	if (error[0]) {
		sc->scored = t->expected || external;
		return 0;
	}
	if (!external) {
		if (t->expected) {
			sc->score = batch_score_answer(s, res->answer, t->expected);
			sc->scored = true;
		}
		return 0;
	}
	struct sc_err serr = {0};
	int rc;
	if (s->kind == BATCH_SCORER_SWE) {
		rc = score_swe(r, t, s, dir, sc, &serr);
	} else if (s->kind == BATCH_SCORER_REWARD) {
		_cleanup_free_ char *ans = reward_answer(res->answer, r->o->mode == BATCH_VANILLA);
		rc = score_reward(r, t, dir, ans ? ans : res->answer, &sc->score, sc->reward_error,
				  sizeof(sc->reward_error), &serr);
	} else {
		rc = score_command(r, pool_of(r, t), s, dir, res->answer, t->expected, &sc->score,
				   &sc->checker_timed_out, &serr);
	}
	if (rc < 0) {
		if (atomic_load(&r->abort))
			return -1;
		snprintf(error, error_size, "scorer: %.480s", serr.msg);
		sc->score = 0;
	}
	sc->scored = true;
	return 0;
}

/* Append the result line and count it; a line that cannot be written
 * stops the run (results would be lost). */
static void record_attempt(struct runner *r, const struct batch_outcome *out, const char *error)
{
	char *line = batch_record_format(out);
	struct sc_err werr = {0};
	int wrc = -1;
	if (line) {
		pthread_mutex_lock(&r->write_mu);
		wrc = batch_results_append(r->results_fd, line, strlen(line), &werr);
		pthread_mutex_unlock(&r->write_mu);
	}
	free(line);
	pthread_mutex_lock(&r->mu);
	if (wrc == 0) {
		r->done++;
		r->done_now++;
		if (error[0]) {
			r->errors++;
			snprintf(r->last_error, sizeof(r->last_error), "%.60s: %.130s", out->task->id, error);
		}
		if (out->scored) {
			r->scored++;
			r->score_sum += out->score;
		}
		r->tokens_in += out->input_tokens;
		r->tokens_out += out->output_tokens;
	} else {
		snprintf(r->last_error, sizeof(r->last_error), "%.190s", line ? werr.msg : "out of memory");
		atomic_store(&r->abort, true); /* results cannot be recorded: stop */
	}
	pthread_mutex_unlock(&r->mu);
}

static void run_attempt(struct runner *r, const struct attempt *a)
{
	const struct batch_options *o = r->o;
	const struct batch_task *t = &r->tasks.v[a->task];
	char safe[160], rel[256], dir[SC_PATH_BUF];
	batch_safe_name(t->id, safe, sizeof(safe));
	snprintf(rel, sizeof(rel), "attempts/%s/%u", safe, a->repeat);
	if (sc_path(dir, sizeof(dir), "%s/%s", r->dir, rel) < 0)
		return;
	/* what a crashed or superseded attempt left */
	sc_remove_tree(dir);

	struct attempt_run ar = {.cfg = o->agent};
	ar.cfg.problem = t->problem;
	ar.cfg.input_dir = t->input_dir ? t->input_dir : o->default_input;
	ar.cfg.out_dir = dir;
	ar.cfg.quiet = true;
	ar.cfg.keep = false;
	ar.cfg.cancel = &r->abort;
	ar.cfg.log = (struct sc_log){0};
	ar.cfg.cell = NULL;
	struct agent_result res = {0};
	struct cell *own = NULL;
	const struct group *g = a->group >= 0 ? &r->groups[a->group] : NULL;
	if (g)
		(void)group_cell(r, a, &own, ar.error, sizeof(ar.error));
	double t0 = sc_now(); /* a group's setup is counted once, in setup_s */
	long img = r->task_image ? r->task_image[a->task] : -1;
	if (ar.error[0])
		; /* the group's setup failed */
	else if (img >= 0 && r->images.v[img].error[0])
		snprintf(ar.error, sizeof(ar.error), "%.500s", r->images.v[img].error);
	else
		prepare_problem(r, a, safe, dir, &ar);
	if (!ar.error[0])
		run_episode(r, t, own, &ar, &res);
	else if (own)
		cell_destroy(own, &(struct sc_err){0});
	if (ar.stage[0])
		sc_remove_tree(ar.stage);
	free(ar.prompt);
	struct batch_scorer s = scorer_of(o, t);
	struct attempt_score sc = {0};
	/* interrupted: no result, a rerun runs it again */
	if ((atomic_load(&r->abort) && ar.error[0]) ||
	    score_attempt(r, t, &s, dir, &res, ar.error, sizeof(ar.error), &sc) < 0) {
		agent_result_free(&res);
		return;
	}
	char note[200] = "";
	if (sc.checker_timed_out && !ar.error[0])
		snprintf(note, sizeof(note),
			 "the checker timed out after %g s and gave no verdict (scored 0); raise "
			 "the scorer's \"timeout\" or --checker-timeout", s.timeout_s);
	struct batch_outcome out = {
		.task = t, .repeat = a->repeat,
		.status = ar.error[0] ? "error" : sc.checker_timed_out ? "checker_timeout"
								 : agent_status_name(res.status),
		.answer = res.answer, .scored = sc.scored, .score = sc.score,
		.scorer = batch_scorer_name(s.kind), .steps = res.steps,
		.input_tokens = res.input_tokens, .output_tokens = res.output_tokens,
		.wall_s = sc_now() - t0,
		.error = ar.error[0] ? ar.error : note[0] ? note : NULL,
		.reward_error = sc.reward_error[0] ? sc.reward_error : NULL,
		.answer_error = res.answer_error[0] ? res.answer_error : NULL,
		.files_note = res.files_truncated ? res.files_note : NULL,
		.vanilla = o->mode == BATCH_VANILLA, .dir = rel,
		.image = img >= 0 ? r->images.v[img].named : o->image ? o->image : "host",
		.store_image = img >= 0 && r->images.v[img].opened ? r->images.v[img].store : NULL,
		.tests = sc.tests,
		.group = g ? (long)g->index : -1, .group_size = g ? g->size : 0,
		.setup_s = g ? g->setup_s : 0, .setup_run = g && g->run[0] ? g->run : NULL,
	};
	record_attempt(r, &out, ar.error);
	cJSON_Delete(sc.tests);
	agent_result_free(&res);
}

static void *worker(void *arg)
{
	struct runner *r = arg;
	for (;;) {
		pthread_mutex_lock(&r->mu);
		if (atomic_load(&r->abort) || r->next >= r->ntodo) {
			r->exited++;
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		struct attempt a = r->todo[r->next++];
		r->running++;
		pthread_mutex_unlock(&r->mu);
		run_attempt(r, &a);
		pthread_mutex_lock(&r->mu);
		r->running--;
		pthread_mutex_unlock(&r->mu);
	}
}

/* ---- progress ---- */

static void duration(char *buf, size_t size, double s)
{
	if (!isfinite(s) || s < 0)
		snprintf(buf, size, "?");
	else if (s < 60)
		snprintf(buf, size, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void progress(struct runner *r, bool final)
{
	pthread_mutex_lock(&r->mu);
	size_t done = r->done, total = r->total, running = r->running, errors = r->errors;
	size_t now = r->done_now, left;
	double mean = r->scored ? r->score_sum / (double)r->scored : NAN;
	uint64_t tin = r->tokens_in, tout = r->tokens_out;
	pthread_mutex_unlock(&r->mu);
	left = total > done ? total - done : 0;
	double el = sc_now() - r->t0;
	char eta[32], in[16], out[16], m[16];
	duration(eta, sizeof(eta), now ? el / (double)now * (double)left : NAN);
	batch_human_count(in, sizeof(in), tin);
	batch_human_count(out, sizeof(out), tout);
	if (isnan(mean))
		snprintf(m, sizeof(m), "-");
	else
		snprintf(m, sizeof(m), "%.3f", mean);
	/* the last one is a note: it stays (on a terminal, after the others) */
	sc_log(&r->o->log, final ? SC_LOG_INFO : SC_LOG_PROGRESS,
	       "batch: %zu/%zu done, %zu running, mean score %s, tokens %s in / %s out, %zu errors, "
	       "ETA %s", done, total, running, m, in, out, errors, final ? "0s" : eta);
}

/* ---- the run ---- */

static void report_bad(void *arg, unsigned line, const char *why)
{
	const struct batch_options *o = arg;
	sc_log(&o->log, SC_LOG_WARN, "batch: %s:%u: %s; line skipped", o->tasks_path, line, why);
}

static bool needs_cells(const struct runner *r, const size_t *sel, size_t nsel)
{
	if (r->o->mode == BATCH_SANDBOX || r->o->benchmark)
		return true;
	if (r->o->scorer.kind == BATCH_SCORER_COMMAND)
		for (size_t i = 0; i < nsel; i++)
			if (!r->tasks.v[sel[i]].has_scorer)
				return true;
	for (size_t i = 0; i < nsel; i++)
		if (r->tasks.v[sel[i]].has_scorer && r->tasks.v[sel[i]].scorer.kind == BATCH_SCORER_COMMAND)
			return true;
	return false;
}

/* At most how many cells the attempts to run take (the agent's, the
 * benchmark's prompt and reward helpers, a command scorer's) and the
 * reward check: the pool makes no more than that. */
static size_t cells_wanted(const struct runner *r, long image)
{
	const struct batch_options *o = r->o;
	size_t n = o->benchmark && image < 0 ? 1 : 0;
	for (size_t i = 0; i < r->ntodo; i++) {
		const struct batch_task *t = &r->tasks.v[r->todo[i].task];
		if ((r->task_image ? r->task_image[r->todo[i].task] : -1) != image)
			continue;
		enum batch_scorer_kind k = t->has_scorer ? t->scorer.kind : o->scorer.kind;
		/* a group takes one cell for its setup; its attempts, forks */
		bool agent = o->mode == BATCH_SANDBOX && (r->todo[i].group < 0 || !r->todo[i].slot);
		n += agent + (o->benchmark ? 2 : 0) +
		     (k == BATCH_SCORER_COMMAND || k == BATCH_SCORER_SWE);
	}
	return n;
}

static int check_checkers(const struct runner *r, const size_t *sel, size_t nsel, struct sc_err *err)
{
	for (size_t i = 0; i < nsel; i++) {
		const struct batch_task *t = &r->tasks.v[sel[i]];
		const struct batch_scorer *s = t->has_scorer ? &t->scorer : &r->o->scorer;
		if (s->kind == BATCH_SCORER_COMMAND && !s->command && !r->o->scorer.command)
			return sc_fail(err, 0, "task \"%.100s\" (line %u) uses the command scorer but "
					       "names no command: add \"command\" to its scorer or pass "
					       "--checker CMD", t->id, t->line);
	}
	return 0;
}

/* Before any episode, as the reference does: reward.py imports in a cell
 * and has compute_score (a missing package stops the run, not every
 * attempt after its episode). */
static int check_reward(struct runner *r, struct sc_err *err)
{
	cJSON *req = cJSON_CreateObject(), *v = NULL;
	if (!req)
		return sc_fail(err, ENOMEM, "reward check");
	int rc = bench_python(r, "check", req, NULL, &v, err);
	cJSON_Delete(req);
	if (rc < 0)
		return sc_err_wrap(err, "checking %s/reward.py in a cell", r->o->benchmark);
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(v, "ok");
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(v, "load_error");
	if (cJSON_IsString(le))
		rc = sc_fail(err, 0, "%s/reward.py cannot be imported in the cell: %.300s (install what "
				     "it imports in the image; see docs/lis.md)", r->o->benchmark,
			     le->valuestring);
	else if (!cJSON_IsTrue(ok))
		rc = sc_fail(err, 0, "%s/reward.py defines no compute_score function", r->o->benchmark);
	cJSON_Delete(v);
	return rc;
}

static int start_threads(struct runner *r, pthread_t *th, size_t n, struct sc_err *err)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	for (size_t i = 0; i < n; i++) {
		int e = pthread_create(&th[i], &attr, worker, r);
		if (e) {
			pthread_attr_destroy(&attr);
			pthread_mutex_lock(&r->mu);
			atomic_store(&r->abort, true);
			pthread_mutex_unlock(&r->mu);
			for (size_t k = 0; k < i; k++)
				pthread_join(th[k], NULL);
			return sc_fail(err, e, "cannot start worker thread %zu", i + 1);
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

static void pause_a_little(const struct batch_options *o, double s)
{
	if (o->wait) {
		o->wait(o->wait_ctx, s);
		return;
	}
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(s * 1e9)};
	nanosleep(&ts, NULL);
}

/* Wait for the workers, with progress lines. A raised o->cancel lets the
 * running episodes end (their attempts get no result and run again next
 * time) and starts no new one. */
static void supervise(struct runner *r, size_t nthreads)
{
	const struct batch_options *o = r->o;
	double interval = o->live_progress ? 0.5 : 5.0, last = sc_now();
	bool stopping = false;
	for (;;) {
		pause_a_little(o, 0.2);
		if (!stopping && o->cancel && atomic_load(o->cancel)) {
			stopping = true;
			atomic_store(&r->abort, true);
			sc_log(&o->log, SC_LOG_INFO, "batch: stopping: waiting for the running episodes "
						     "(signal again to stop at once)");
		}
		pthread_mutex_lock(&r->mu);
		bool finished = r->exited == nthreads && r->running == 0;
		pthread_mutex_unlock(&r->mu);
		if (finished)
			break;
		if (!o->quiet && sc_now() - last >= interval) {
			progress(r, false);
			last = sc_now();
		}
	}
	if (!o->quiet)
		progress(r, true);
}

static int select_tasks(struct runner *r, size_t **sel_out, size_t *nsel)
{
	const struct batch_options *o = r->o;
	size_t n = r->tasks.n;
	if (o->max_tasks && o->max_tasks < n)
		n = o->max_tasks; /* the first N of the file, before sharding */
	size_t *sel = calloc(n + 1, sizeof(size_t)), k = 0;
	if (!sel)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!o->shard_count || r->tasks.v[i].hash % o->shard_count == o->shard_index)
			sel[k++] = i;
	*sel_out = sel;
	*nsel = k;
	return 0;
}

/* Does task i run in groups forked from its setup? */
static bool grouped(const struct runner *r, size_t i)
{
	return r->tasks.v[i].setup && r->o->mode == BATCH_SANDBOX;
}

static unsigned group_size(const struct runner *r)
{
	return r->o->group_size > 1 ? r->o->group_size : 1;
}

/* At a group's first repeat `rep`: the group of task i, with its
 * attempts that have no result yet (none: no group). */
static int plan_group(struct runner *r, const struct batch_keyset *have, size_t i, unsigned rep)
{
	const struct batch_task *t = &r->tasks.v[i];
	unsigned gs = group_size(r);
	if (rep % gs)
		return 0;
	unsigned size = r->o->repeat - rep < gs ? r->o->repeat - rep : gs, n = 0;
	struct group *grown = realloc(r->groups, (r->ngroups + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	r->groups = grown;
	struct group *g = &r->groups[r->ngroups];
	*g = (struct group){.task = i, .index = rep / gs, .size = size};
	for (unsigned k = rep; k < rep + size; k++) {
		if (batch_keyset_has(have, t->id, k)) {
			r->done++;
			continue;
		}
		r->todo[r->ntodo++] = (struct attempt){.task = i, .repeat = k,
						       .group = (long)r->ngroups, .slot = n++};
	}
	if (!n)
		return 0;
	g->n = n;
	g->cells = calloc(n, sizeof(*g->cells));
	g->errors = calloc(n, sizeof(*g->errors));
	r->ngroups++; /* counted now: freed with the runner */
	return g->cells && g->errors ? 0 : -1;
}

static int plan_attempts(struct runner *r, const size_t *sel, size_t nsel,
			 const struct batch_records *prior)
{
	struct batch_keyset have = {0};
	for (size_t i = 0; i < prior->n; i++)
		if (batch_keyset_add(&have, prior->v[i].id, prior->v[i].repeat) < 0)
			goto oom;
	r->total = nsel * r->o->repeat;
	r->todo = calloc(r->total + 1, sizeof(*r->todo));
	if (!r->todo)
		goto oom;
	/* repeat-major: every task's first attempt before any second one;
	 * a group's attempts together, at its first repeat */
	for (unsigned rep = 0; rep < r->o->repeat; rep++)
		for (size_t i = 0; i < nsel; i++) {
			if (grouped(r, sel[i])) {
				if (plan_group(r, &have, sel[i], rep) < 0)
					goto oom;
				continue;
			}
			const struct batch_task *t = &r->tasks.v[sel[i]];
			if (batch_keyset_has(&have, t->id, rep)) {
				r->done++;
				continue;
			}
			r->todo[r->ntodo++] = (struct attempt){.task = sel[i], .repeat = rep, .group = -1};
		}
	/* running figures include what earlier runs recorded for these tasks */
	struct batch_keyset wanted = {0};
	for (size_t i = 0; i < nsel; i++)
		batch_keyset_add(&wanted, r->tasks.v[sel[i]].id, 0);
	for (size_t i = 0; i < prior->n; i++) {
		const struct batch_record *p = &prior->v[i];
		if (p->repeat >= r->o->repeat || !batch_keyset_has(&wanted, p->id, 0))
			continue;
		r->errors += !strcmp(p->status, "error");
		if (p->scored) {
			r->scored++;
			r->score_sum += p->score;
		}
		r->tokens_in += p->input_tokens;
		r->tokens_out += p->output_tokens;
	}
	batch_keyset_free(&wanted);
	batch_keyset_free(&have);
	return 0;
oom:
	batch_keyset_free(&have);
	return -1;
}

static int finish(struct runner *r, struct batch_summary *summary, enum batch_end *end,
		  struct sc_err *err)
{
	const char *dirs[] = {r->dir};
	struct batch_records rs;
	size_t expected;
	if (batch_collect_into(dirs, 1, &rs, &expected, err) < 0)
		return -1;
	batch_summarize(&rs, summary);
	summary->expected_attempts = r->total;
	batch_records_free(&rs);
	if (atomic_load(&r->abort))
		*end = BATCH_END_INTERRUPTED;
	else
		*end = summary->errors ? BATCH_END_ERRORS : BATCH_END_DONE;
	return 0;
}

/* The run directory (made and locked: the lock fd in *lock) and the tasks. */
static int open_run(struct runner *r, int *lock, struct sc_err *err)
{
	const struct batch_options *o = r->o;
	if (sc_path(r->dir, sizeof(r->dir), "%s", o->out_dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "--out");
	if (sc_mkdir_p(r->dir, 0755, err) < 0 || (*lock = lock_dir(r->dir, err)) < 0)
		return -1;
	if (o->swe)
		return batch_swe_load(o->tasks_path, o->swe_image, &r->tasks, report_bad, (void *)o, err);
	if (!o->benchmark)
		return batch_tasks_load(o->tasks_path, &r->tasks, report_bad, (void *)o, err);
	char real[PATH_MAX];
	const char *base = realpath(o->benchmark, real) ? strrchr(real, '/') : NULL;
	if (!base || !base[1] ||
	    sc_path(r->bench_cell, sizeof(r->bench_cell), "/testbed/%s", base + 1) < 0)
		snprintf(r->bench_cell, sizeof(r->bench_cell), "/testbed/benchmark");
	return batch_bench_load(o->tasks_path, &r->tasks, report_bad, (void *)o, err);
}

static void note_compaction(const struct batch_options *o, const struct batch_compact_stats *cst)
{
	if (o->quiet)
		return;
	if (cst->partial)
		sc_log(&o->log, SC_LOG_WARN, "batch: dropped a partial last line of results.jsonl (a "
					     "crash mid-write); its attempt runs again");
	if (cst->invalid || cst->duplicate)
		sc_log(&o->log, SC_LOG_WARN, "batch: moved %zu invalid and %zu duplicate lines of "
					     "results.jsonl to superseded.jsonl", cst->invalid, cst->duplicate);
	if (cst->superseded)
		sc_log(&o->log, SC_LOG_INFO, "batch: retrying %zu attempts that ended in error (their "
					     "lines are kept in superseded.jsonl)", cst->superseded);
}

/* Which attempts to run: the selected tasks' attempts without a result
 * in results.jsonl (compacted first). */
static int plan_run(struct runner *r, size_t **sel, size_t *nsel, struct batch_records *prior,
		    struct sc_err *err)
{
	const struct batch_options *o = r->o;
	struct batch_compact_stats cst;
	if (select_tasks(r, sel, nsel) < 0)
		return sc_fail(err, ENOMEM, "tasks");
	if (check_checkers(r, *sel, *nsel, err) < 0 ||
	    batch_results_compact(r->dir, o->retry_errors, prior, &cst, err) < 0)
		return -1;
	note_compaction(o, &cst);
	if (plan_attempts(r, *sel, *nsel, prior) < 0)
		return sc_fail(err, ENOMEM, "attempts");
	write_manifest(r, *nsel);
	return 0;
}

static int open_results(struct runner *r, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/results.jsonl", r->dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "results path");
	r->results_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (r->results_fd < 0)
		return sc_fail(err, errno, "cannot open %s", path);
	return 0;
}

/* The pool, sized for nthreads episodes and for no more cells than the
 * attempts take. */
/* The images the attempts to run name (benchmark folders have none),
 * each fetched once. */
static int plan_images(struct runner *r, struct sc_err *err)
{
	const struct batch_options *o = r->o;
	if (o->benchmark)
		return 0;
	bool any = false;
	for (size_t i = 0; i < r->ntodo && !any; i++)
		any = r->tasks.v[r->todo[i].task].image != NULL;
	if (!any)
		return 0;
	if (!(r->task_image = calloc(r->tasks.n, sizeof(*r->task_image))))
		return sc_fail(err, ENOMEM, "images");
	for (size_t i = 0; i < r->tasks.n; i++) {
		const char *named = r->tasks.v[i].image;
		r->task_image[i] = -1;
		if (named && (r->task_image[i] = batch_images_add(&r->images, named)) < 0)
			return sc_fail(err, ENOMEM, "images");
	}
	batch_images_resolve(&r->images, o, &r->pool_spec);
	return 0;
}

/* A pool of `wanted` cells at most on spec. */
static int new_pool(const struct runner *r, size_t nthreads, size_t workers, size_t wanted,
		    const struct cell_spec *spec, struct cell_pool **out, struct sc_err *err)
{
	size_t size = nthreads < 64 ? nthreads : 64;
	if (wanted && wanted < size)
		size = wanted;
	const struct cell_pool_opts po = {.size = size, .workers = workers,
					  .reuse = !r->o->no_reuse,
					  .max_renewals = (unsigned)r->o->max_reuse};
	if (cell_pool_new_opts(spec, &po, out, err) < 0)
		return -1;
	cell_pool_limit(*out, wanted);
	return 0;
}

static int make_pool(struct runner *r, size_t nthreads, struct sc_err *err)
{
	const struct batch_options *o = r->o;
	if (!o->agent.spec)
		return sc_fail(err, 0, "no cell spec");
	/* ready cells only need to cover the time to make one: each
	 * running episode holds its own on top of these */
	size_t workers = o->pool_workers ? o->pool_workers : nthreads / 4;
	if (workers < 2)
		workers = 2;
	if (workers > 16)
		workers = 16;
	r->pool_spec = *o->agent.spec;
	r->pool_spec.make_dirs = AGENT_CELL_DIRS;
	if (plan_images(r, err) < 0)
		return -1;
	for (size_t i = 0; i < r->images.n; i++) {
		struct batch_image *im = &r->images.v[i];
		size_t wanted = cells_wanted(r, (long)i);
		if (im->error[0] || !wanted)
			continue;
		if (new_pool(r, nthreads, workers, wanted, &im->spec, &im->pool, err) < 0)
			return sc_err_wrap(err, "image '%s'", im->store);
	}
	size_t wanted = cells_wanted(r, -1);
	if (!wanted && r->images.n)
		return 0; /* every task names its image */
	return new_pool(r, nthreads, workers, wanted, &r->pool_spec, &r->pool, err);
}

/* The episodes: nthreads workers, watched until they are all done. */
static int run_workers(struct runner *r, size_t nthreads, struct sc_err *err)
{
	const struct batch_options *o = r->o;
	_cleanup_free_ pthread_t *th = calloc(nthreads, sizeof(*th));
	r->t0 = sc_now();
	if (!th)
		return sc_fail(err, ENOMEM, "threads");
	if (start_threads(r, th, nthreads, err) < 0)
		return -1;
	supervise(r, nthreads);
	for (size_t i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	(void)fdatasync(r->results_fd);
	if (atomic_load(&r->abort) && r->last_error[0] && !o->quiet)
		sc_log(&o->log, SC_LOG_ERROR, "batch: last error: %s", r->last_error);
	return 0;
}

/* The helper that forks set-up cells (group.c), on the batch's spec and
 * on each task image's: forked here, before any thread. */
static int start_forker(struct runner *r, struct sc_err *err)
{
	_cleanup_free_ const struct cell_spec **specs = calloc(r->images.n + 1, sizeof(*specs));
	if (!specs)
		return sc_fail(err, ENOMEM, "specs");
	specs[0] = &r->pool_spec;
	for (size_t i = 0; i < r->images.n; i++)
		specs[i + 1] = &r->images.v[i].spec;
	return batch_forker_start(specs, r->images.n + 1, &r->forker, err);
}

/* Everything before the first episode, then the episodes. */
static int run_attempts(struct runner *r, const size_t *sel, size_t nsel, struct sc_err *err)
{
	const struct batch_options *o = r->o;
	/* Before any thread: the state paths, the pool, then libcurl. The
	 * pool's workers (forked here) inherit the caller's signal mask: with
	 * SIGINT blocked they ignore a terminal's ^C and clean up after us
	 * instead; cells unblock them. libcurl comes after the fork: its ~30
	 * libraries would otherwise be copied into every worker and every
	 * cell's init, and make each of their forks and exits dearer. */
	(void)cell_state_root();
	(void)cell_data_root();
	(void)cell_cache_root();
	size_t nthreads = o->concurrency < r->ntodo ? o->concurrency : r->ntodo;
	if (needs_cells(r, sel, nsel) && make_pool(r, nthreads, err) < 0)
		return -1;
	if (o->benchmark && check_reward(r, err) < 0)
		return -1;
	if (r->ngroups && start_forker(r, err) < 0)
		return -1;
	if (!sc_curl_load(err))
		return -1;
	return run_workers(r, nthreads, err);
}

static void runner_free(struct runner *r)
{
	/* the forked cells no attempt took (the run stopped) go with it */
	batch_forker_stop(r->forker);
	for (size_t i = 0; i < r->ngroups; i++) {
		free(r->groups[i].cells);
		free(r->groups[i].errors);
	}
	free(r->groups);
	pthread_cond_destroy(&r->group_cv);
	if (r->pool)
		cell_pool_free(r->pool); /* removes every cell it made */
	batch_images_free(&r->images);
	free(r->task_image);
	sc_closep(&r->results_fd);
	free(r->todo);
	batch_tasks_free(&r->tasks);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->pool_mu);
	pthread_mutex_destroy(&r->write_mu);
}

int batch_run(const struct batch_options *o, struct batch_summary *summary, enum batch_end *end,
	      struct sc_err *err)
{
	*summary = (struct batch_summary){0};
	struct runner r = {.o = o, .results_fd = -1};
	pthread_mutex_init(&r.mu, NULL);
	pthread_mutex_init(&r.pool_mu, NULL);
	pthread_mutex_init(&r.write_mu, NULL);
	pthread_cond_init(&r.group_cv, NULL);
	int rc = -1;
	_cleanup_fd_ int lock = -1;
	_cleanup_free_ size_t *sel = NULL;
	size_t nsel = 0;
	struct batch_records prior = {0};

	if (open_run(&r, &lock, err) < 0 || plan_run(&r, &sel, &nsel, &prior, err) < 0 ||
	    open_results(&r, err) < 0)
		goto out;
	if (!o->quiet)
		sc_log(&o->log, SC_LOG_INFO, "batch: %zu tasks%s x %u repeats = %zu attempts, %zu to "
					     "run, concurrency %u, results in %s/results.jsonl",
		       nsel, o->shard_count ? " in this shard" : "", o->repeat, r.total, r.ntodo,
		       o->concurrency, r.dir);
	if (r.ntodo == 0 || run_attempts(&r, sel, nsel, err) == 0)
		rc = finish(&r, summary, end, err);
out:
	runner_free(&r);
	batch_records_free(&prior);
	return rc;
}
