/* Statistics over batch results: one run, or the shards of one merged. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "batch_priv.h"

#define CORRECT(score) ((score) >= 1.0 - 1e-9)

/* batch.json's "attempts": how many this run directory should hold. */
static size_t expected_of(const char *dir)
{
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/batch.json", dir) < 0)
		return 0;
	char buf[65536];
	ssize_t n = sc_read_small(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, buf,
				  sizeof(buf), NULL);
	if (n <= 0)
		return 0;
	cJSON *j = cJSON_ParseWithLength(buf, (size_t)n);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "attempts");
	size_t v = cJSON_IsNumber(a) && a->valuedouble > 0 ? (size_t)a->valuedouble : 0;
	cJSON_Delete(j);
	return v;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shard-* subdirectories of dir, sorted. */
static size_t shard_dirs(const char *dir, char ***out)
{
	*out = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "shard-", 6))
			continue;
		char *p = NULL;
		struct stat st;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			break;
		if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(p);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **g = realloc(*out, cap * sizeof(char *));
			if (!g) {
				free(p);
				break;
			}
			*out = g;
		}
		(*out)[n++] = p;
	}
	closedir(d);
	if (n)
		qsort(*out, n, sizeof(char *), cmp_str);
	return n;
}

static int collect_one(const char *dir, struct batch_records *out, size_t *expected,
		       struct sc_err *err)
{
	struct batch_records rs = {0};
	if (batch_results_read(dir, &rs, err) < 0)
		return -1;
	*expected += expected_of(dir);
	for (size_t i = 0; i < rs.n; i++) {
		rs.v[i].run = strdup(dir);
		if (batch_records_push(out, &rs.v[i]) < 0) {
			for (size_t k = i; k < rs.n; k++)
				batch_record_free(&rs.v[k]);
			free(rs.v);
			return sc_fail(err, ENOMEM, "results");
		}
	}
	free(rs.v);
	return 0;
}

int batch_collect_into(const char *const *dirs, size_t ndirs, struct batch_records *out,
		       size_t *expected, struct sc_err *err)
{
	*out = (struct batch_records){0};
	*expected = 0;
	for (size_t i = 0; i < ndirs; i++) {
		struct stat st;
		if (stat(dirs[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
			batch_records_free(out);
			return sc_fail(err, 0, "%s is not a batch directory", dirs[i]);
		}
		char **shards;
		size_t ns = shard_dirs(dirs[i], &shards);
		int rc = collect_one(dirs[i], out, expected, err);
		for (size_t k = 0; k < ns; k++) {
			if (rc == 0)
				rc = collect_one(shards[k], out, expected, err);
			free(shards[k]);
		}
		free(shards);
		if (rc < 0) {
			batch_records_free(out);
			return -1;
		}
	}
	/* one record per attempt across directories: the last read wins */
	struct batch_keyset seen = {0};
	size_t w;
	bool *drop = calloc(out->n + 1, sizeof(bool));
	if (!drop) {
		batch_records_free(out);
		return sc_fail(err, ENOMEM, "results");
	}
	for (size_t k = out->n; k-- > 0;) {
		if (batch_keyset_has(&seen, out->v[k].id, out->v[k].repeat))
			drop[k] = true;
		else
			batch_keyset_add(&seen, out->v[k].id, out->v[k].repeat);
	}
	w = 0;
	for (size_t k = 0; k < out->n; k++) {
		if (drop[k])
			batch_record_free(&out->v[k]);
		else
			out->v[w++] = out->v[k];
	}
	out->n = w;
	free(drop);
	batch_keyset_free(&seen);
	return 0;
}

int batch_collect(const char *const *dirs, size_t ndirs, struct batch_records **out,
		  size_t *expected, struct sc_err *err)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return sc_fail(err, ENOMEM, "results");
	if (batch_collect_into(dirs, ndirs, *out, expected, err) < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

void batch_records_destroy(struct batch_records *rs)
{
	if (!rs)
		return;
	batch_records_free(rs);
	free(rs);
}

double batch_pass_at_k(unsigned n, unsigned c, unsigned k)
{
	if (k == 0 || n < k)
		return NAN;
	if (n - c < k)
		return 1.0;
	/* 1 - C(n-c, k) / C(n, k), as a stable product */
	double p = 1.0;
	for (unsigned i = n - c + 1; i <= n; i++)
		p *= 1.0 - (double)k / i;
	return 1.0 - p;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double percentile(const double *v, size_t n, double q)
{
	if (!n)
		return 0;
	size_t rank = (size_t)ceil(q * (double)n);
	return v[rank ? rank - 1 : 0];
}

/* per task: attempts and correct ones */
struct tally {
	const char *id;
	unsigned n, c;
};

static int cmp_tally(const void *a, const void *b)
{
	return strcmp(((const struct tally *)a)->id, ((const struct tally *)b)->id);
}

static void count_status(struct batch_summary *s, const char *status)
{
	if (!strcmp(status, "submitted"))
		s->submitted++;
	else if (!strcmp(status, "max_steps"))
		s->max_steps++;
	else if (!strcmp(status, "episode_timeout"))
		s->episode_timeout++;
	else if (!strcmp(status, "error"))
		s->errors++;
	else if (!strcmp(status, "checker_timeout"))
		s->checker_timeout++;
	else
		s->other++;
}

/* One attempt into the counts and sums (rsum: score sums per repeat). */
static void count_record(struct batch_summary *s, const struct batch_record *r, double *sum,
			 double rsum[64])
{
	count_status(s, r->status);
	s->answer_errors += r->answer_error;
	s->files_truncated += r->files_truncated;
	if (r->repeat + 1 > s->repeats)
		s->repeats = r->repeat + 1;
	if (r->scored) {
		s->scored++;
		*sum += r->score;
		s->correct += CORRECT(r->score);
		if (r->repeat < 64) {
			rsum[r->repeat] += r->score;
			s->repeat_scored[r->repeat]++;
		}
	}
	s->input_tokens += r->input_tokens;
	s->output_tokens += r->output_tokens;
	s->total_wall_s += r->wall_s;
}

/* Sort t[0..n) by task and merge each task's attempts; returns the tasks. */
static size_t merge_tallies(struct tally *t, size_t n)
{
	qsort(t, n, sizeof(*t), cmp_tally);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(t[m - 1].id, t[i].id)) {
			t[m - 1].n += t[i].n;
			t[m - 1].c += t[i].c;
		} else {
			t[m++] = t[i];
		}
	}
	return m;
}

/* pass@1, 2, 4, ... up to the repeats, each over the tasks with that many
 * scored attempts. */
static void pass_at_ks(struct batch_summary *s, const struct tally *t, size_t m)
{
	if (s->repeats <= 1)
		return;
	for (unsigned k = 1; s->npass < SC_ARRAY_LEN(s->pass_k); k *= 2) {
		unsigned kk = k < s->repeats ? k : s->repeats;
		double acc = 0;
		size_t used = 0;
		for (size_t i = 0; i < m; i++)
			if (t[i].n >= kk) {
				acc += batch_pass_at_k(t[i].n, t[i].c, kk);
				used++;
			}
		if (used) {
			s->pass_k[s->npass] = kk;
			s->pass_at[s->npass++] = acc / (double)used;
		}
		if (kk == s->repeats)
			break;
	}
}

/* Setups once each: attempts forked from one setup share its setup_run. */
static void count_setups(struct batch_summary *s, const struct batch_records *rs)
{
	struct sc_strset seen = {0};
	for (size_t i = 0; i < rs->n; i++) {
		const struct batch_record *r = &rs->v[i];
		if (r->group < 0)
			continue;
		s->grouped++;
		char key[BATCH_MAX_ID + 80];
		snprintf(key, sizeof(key), "%s\x1f%ld\x1f%s", r->id, r->group,
			 r->setup_run ? r->setup_run : "");
		if (sc_strset_has(&seen, key) || sc_strset_add(&seen, key) < 0)
			continue;
		s->setups++;
		s->setup_total_s += r->setup_s;
		if (r->setup_s > s->setup_max_s)
			s->setup_max_s = r->setup_s;
	}
	sc_strset_free(&seen);
}

void batch_summarize(const struct batch_records *rs, struct batch_summary *s)
{
	*s = (struct batch_summary){0};
	s->attempts = rs->n;
	double sum = 0, rsum[64] = {0};
	double *walls = calloc(rs->n + 1, sizeof(double));
	struct tally *t = calloc(rs->n + 1, sizeof(*t));
	for (size_t i = 0; i < rs->n; i++) {
		const struct batch_record *r = &rs->v[i];
		count_record(s, r, &sum, rsum);
		if (walls)
			walls[i] = r->wall_s;
		if (t)
			t[i] = (struct tally){.id = r->id, .n = r->scored, .c = r->scored && CORRECT(r->score)};
	}
	s->mean = s->scored ? sum / (double)s->scored : NAN;
	for (unsigned k = 0; k < 64 && k < s->repeats; k++)
		s->repeat_mean[k] = s->repeat_scored[k] ? rsum[k] / (double)s->repeat_scored[k] : NAN;
	if (walls) {
		qsort(walls, rs->n, sizeof(double), cmp_dbl);
		s->p50_s = percentile(walls, rs->n, 0.50);
		s->p95_s = percentile(walls, rs->n, 0.95);
	}
	if (t) {
		s->tasks = merge_tallies(t, rs->n);
		pass_at_ks(s, t, s->tasks);
	}
	free(walls);
	free(t);
	count_setups(s, rs);
}

void batch_human_count(char *buf, size_t size, uint64_t v)
{
	if (v >= 10000000)
		snprintf(buf, size, "%.1fM", v / 1e6);
	else if (v >= 10000)
		snprintf(buf, size, "%.1fk", v / 1e3);
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
}

void batch_summary_print(FILE *f, const struct batch_summary *s, const char *title)
{
	fprintf(f, "%s: %zu attempts of %zu tasks", title, s->attempts, s->tasks);
	if (s->expected_attempts)
		fprintf(f, " (%zu expected, %zu missing)", s->expected_attempts,
			s->expected_attempts > s->attempts ? s->expected_attempts - s->attempts : 0);
	fputc('\n', f);
	if (s->scored)
		fprintf(f, "  score    mean %.4f over %zu scored attempts (%zu scored 1)\n", s->mean,
			s->scored, s->correct);
	else
		fprintf(f, "  score    no scored attempts (no expected answers)\n");
	if (s->repeats > 1) {
		fprintf(f, "  repeats  per-repeat mean");
		double m = 0, m2 = 0;
		unsigned k = 0;
		for (unsigned r = 0; r < s->repeats && r < 64; r++) {
			if (isnan(s->repeat_mean[r]))
				continue;
			if (r < 16)
				fprintf(f, " %.3f", s->repeat_mean[r]);
			m += s->repeat_mean[r];
			m2 += s->repeat_mean[r] * s->repeat_mean[r];
			k++;
		}
		if (s->repeats > 16)
			fprintf(f, " ...");
		if (k > 1) {
			double mean = m / k, var = (m2 - k * mean * mean) / (k - 1);
			fprintf(f, " (sd %.3f)", var > 0 ? sqrt(var) : 0);
		}
		fputc('\n', f);
		if (s->npass) {
			fprintf(f, "  pass@k  ");
			for (unsigned i = 0; i < s->npass; i++)
				fprintf(f, " pass@%u %.4f", s->pass_k[i], s->pass_at[i]);
			fputc('\n', f);
		}
	}
	fprintf(f, "  status   submitted %zu, max_steps %zu, episode_timeout %zu, error %zu", s->submitted,
		s->max_steps, s->episode_timeout, s->errors);
	if (s->checker_timeout)
		fprintf(f, ", checker_timeout %zu", s->checker_timeout);
	if (s->other)
		fprintf(f, ", other %zu", s->other);
	fputc('\n', f);
	if (s->answer_errors || s->files_truncated)
		fprintf(f,
			"  outputs  answer not kept %zu (answer.txt over 4 MiB), files cut %zu "
			"(over --files-limit: raise it to keep them)\n",
			s->answer_errors, s->files_truncated);
	fprintf(f, "  time     p50 %.2f s, p95 %.2f s per episode\n", s->p50_s, s->p95_s);
	if (s->setups)
		fprintf(f, "  setup    %zu setups for %zu attempts in groups: %.2f s in all, mean "
			   "%.2f s, max %.2f s (once per group)\n",
			s->setups, s->grouped, s->setup_total_s, s->setup_total_s / (double)s->setups,
			s->setup_max_s);
	char in[32], out[32], pin[32], pout[32];
	batch_human_count(in, sizeof(in), s->input_tokens);
	batch_human_count(out, sizeof(out), s->output_tokens);
	batch_human_count(pin, sizeof(pin), s->attempts ? s->input_tokens / s->attempts : 0);
	batch_human_count(pout, sizeof(pout), s->attempts ? s->output_tokens / s->attempts : 0);
	fprintf(f, "  tokens   in %s, out %s (%s / %s per attempt)\n", in, out, pin, pout);
}

static void num_or_null(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

void batch_summary_json(FILE *f, const struct batch_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "attempts", (double)s->attempts);
	cJSON_AddNumberToObject(o, "tasks", (double)s->tasks);
	if (s->expected_attempts)
		cJSON_AddNumberToObject(o, "expected_attempts", (double)s->expected_attempts);
	cJSON_AddNumberToObject(o, "scored", (double)s->scored);
	cJSON_AddNumberToObject(o, "correct", (double)s->correct);
	num_or_null(o, "mean_score", s->mean);
	cJSON_AddNumberToObject(o, "repeats", s->repeats);
	if (s->repeats > 1) {
		cJSON *a = cJSON_AddArrayToObject(o, "repeat_mean");
		for (unsigned r = 0; r < s->repeats && r < 64; r++)
			cJSON_AddItemToArray(a, isnan(s->repeat_mean[r]) ? cJSON_CreateNull()
									 : cJSON_CreateNumber(s->repeat_mean[r]));
		cJSON *p = cJSON_AddObjectToObject(o, "pass_at_k");
		for (unsigned i = 0; i < s->npass; i++) {
			char k[16];
			snprintf(k, sizeof(k), "%u", s->pass_k[i]);
			cJSON_AddNumberToObject(p, k, s->pass_at[i]);
		}
	}
	cJSON *st = cJSON_AddObjectToObject(o, "status");
	cJSON_AddNumberToObject(st, "submitted", (double)s->submitted);
	cJSON_AddNumberToObject(st, "max_steps", (double)s->max_steps);
	cJSON_AddNumberToObject(st, "episode_timeout", (double)s->episode_timeout);
	cJSON_AddNumberToObject(st, "error", (double)s->errors);
	cJSON_AddNumberToObject(st, "checker_timeout", (double)s->checker_timeout);
	if (s->other)
		cJSON_AddNumberToObject(st, "other", (double)s->other);
	cJSON_AddNumberToObject(o, "answer_errors", (double)s->answer_errors);
	cJSON_AddNumberToObject(o, "files_truncated", (double)s->files_truncated);
	cJSON_AddNumberToObject(o, "p50_s", s->p50_s);
	cJSON_AddNumberToObject(o, "p95_s", s->p95_s);
	if (s->setups) {
		cJSON_AddNumberToObject(o, "grouped_attempts", (double)s->grouped);
		cJSON_AddNumberToObject(o, "setups", (double)s->setups);
		cJSON_AddNumberToObject(o, "setup_s", round(s->setup_total_s * 1000) / 1000);
		cJSON_AddNumberToObject(o, "setup_max_s", round(s->setup_max_s * 1000) / 1000);
	}
	cJSON_AddNumberToObject(o, "input_tokens", (double)s->input_tokens);
	cJSON_AddNumberToObject(o, "output_tokens", (double)s->output_tokens);
	char *text = cJSON_PrintUnformatted(o);
	if (text)
		fprintf(f, "%s\n", text);
	free(text);
	cJSON_Delete(o);
}
