/* results.jsonl: one JSON line per attempt, appended with one write() each.
 * The rule a reader and a rerun follow: only complete lines count (a crash
 * can leave a last line without its newline), and for one (id, repeat) the
 * later line supersedes the earlier. A run compacts the file first, so that
 * it never holds two lines for one attempt (see docs/batch.md). */
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/jsonget.h"
#include "batch_priv.h"

/* ---- records ---- */

static uint64_t u64_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
		return 0;
	/* 1e300 has no uint64_t: clamp (the conversion would be undefined) */
	return v->valuedouble < 0x1p63 ? (uint64_t)v->valuedouble : (uint64_t)1 << 63;
}

static void add_string_or_null(cJSON *j, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(j, k, v);
	else
		cJSON_AddNullToObject(j, k);
}

char *batch_record_format(const struct batch_outcome *o)
{
	const struct batch_task *t = o->task;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", t->id);
	cJSON_AddNumberToObject(j, "repeat", o->repeat);
	cJSON_AddStringToObject(j, "status", o->status);
	char *cut = o->answer ? strndup(o->answer, BATCH_MAX_ANSWER) : NULL;
	add_string_or_null(j, "answer", cut); /* the whole answer is in answer.txt */
	free(cut);
	add_string_or_null(j, "expected", t->expected);
	if (o->scored)
		cJSON_AddNumberToObject(j, "score", o->score);
	else
		cJSON_AddNullToObject(j, "score");
	cJSON_AddStringToObject(j, "scorer", o->scorer);
	cJSON_AddNumberToObject(j, "steps", o->steps);
	cJSON_AddNumberToObject(j, "input_tokens", (double)o->input_tokens);
	cJSON_AddNumberToObject(j, "output_tokens", (double)o->output_tokens);
	cJSON_AddNumberToObject(j, "wall_s", round(o->wall_s * 1000) / 1000);
	add_string_or_null(j, "error", o->error);
	if (o->reward_error)
		cJSON_AddStringToObject(j, "reward_error", o->reward_error);
	if (o->answer_error)
		cJSON_AddStringToObject(j, "answer_error", o->answer_error);
	if (o->files_note) {
		cJSON_AddTrueToObject(j, "files_truncated");
		cJSON_AddStringToObject(j, "files_note", o->files_note);
	}
	cJSON_AddStringToObject(j, "mode", o->vanilla ? "vanilla" : "sandbox");
	cJSON_AddStringToObject(j, "dir", o->dir);
	if (o->image)
		cJSON_AddStringToObject(j, "image", o->image);
	if (o->store_image)
		cJSON_AddStringToObject(j, "store_image", o->store_image);
	if (o->tests)
		cJSON_AddItemToObject(j, "tests", cJSON_Duplicate(o->tests, true));
	if (o->group >= 0) {
		cJSON_AddNumberToObject(j, "group", (double)o->group);
		cJSON_AddNumberToObject(j, "group_size", o->group_size);
		cJSON_AddNumberToObject(j, "setup_s", round(o->setup_s * 1000) / 1000);
		add_string_or_null(j, "setup_run", o->setup_run);
	}
	if (t->metadata)
		cJSON_AddItemToObject(j, "metadata", cJSON_Duplicate(t->metadata, true));
	for (const cJSON *f = t->extra ? t->extra->child : NULL; f; f = f->next)
		cJSON_AddItemToObject(j, f->string, cJSON_Duplicate(f, true));
	char *line = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return line;
}

int batch_record_parse(const char *line, size_t len, struct batch_record *r)
{
	*r = (struct batch_record){0};
	cJSON *j = cJSON_ParseWithLength(line, len);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *rep = cJSON_GetObjectItemCaseSensitive(j, "repeat");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
	if (!cJSON_IsObject(j) || !cJSON_IsString(id) || !cJSON_IsNumber(rep) || rep->valuedouble < 0 ||
	    rep->valuedouble > BATCH_MAX_REPEAT || !cJSON_IsString(st)) {
		cJSON_Delete(j);
		return -1;
	}
	r->json = j;
	r->id = strdup(id->valuestring);
	r->repeat = (unsigned)rep->valuedouble;
	snprintf(r->status, sizeof(r->status), "%s", st->valuestring);
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(j, "score");
	if (cJSON_IsNumber(sc)) {
		r->scored = true;
		r->score = sc->valuedouble;
	}
	r->steps = (unsigned)u64_of(j, "steps");
	r->input_tokens = u64_of(j, "input_tokens");
	r->output_tokens = u64_of(j, "output_tokens");
	r->wall_s = sc_json_num(j, "wall_s", 0);
	r->answer_error = sc_json_str(j, "answer_error") != NULL;
	r->files_truncated = sc_json_true(j, "files_truncated");
	const char *d = sc_json_str(j, "dir");
	if (d)
		r->dir = strdup(d);
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "group");
	r->group = cJSON_IsNumber(g) && g->valuedouble >= 0 && g->valuedouble <= BATCH_MAX_REPEAT
			   ? (long)g->valuedouble
			   : -1;
	r->setup_s = sc_json_num(j, "setup_s", 0);
	if (!isfinite(r->setup_s) || r->setup_s < 0)
		r->setup_s = 0;
	const char *sr = sc_json_str(j, "setup_run");
	if (sr && strlen(sr) < 64)
		r->setup_run = strdup(sr);
	if (!r->id) {
		batch_record_free(r);
		return -1;
	}
	return 0;
}

void batch_record_free(struct batch_record *r)
{
	free(r->id);
	free(r->dir);
	free(r->run);
	free(r->setup_run);
	cJSON_Delete(r->json);
	*r = (struct batch_record){0};
}

void batch_records_free(struct batch_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		batch_record_free(&rs->v[i]);
	free(rs->v);
	*rs = (struct batch_records){0};
}

int batch_records_push(struct batch_records *rs, const struct batch_record *r)
{
	if (rs->n == rs->cap) {
		size_t c = rs->cap ? rs->cap * 2 : 256;
		struct batch_record *v = realloc(rs->v, c * sizeof(*v));
		if (!v)
			return -1;
		rs->v = v;
		rs->cap = c;
	}
	rs->v[rs->n++] = *r;
	return 0;
}

/* ---- reading ---- */

/* A results file: all of it (it may be appended to while we read: what
 * is there), a missing one is empty. */
#define RESULTS_FILE_MAX ((size_t)1 << 34)
static char *read_file(const char *path, size_t *len, struct sc_err *err)
{
	char *buf = NULL;
	struct sc_err e = {0};
	*len = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, RESULTS_FILE_MAX,
				&buf, len, &e) == 0)
		return buf;
	if (e.errnum == ENOENT)
		return calloc(1, 1);
	if (err)
		*err = e;
	return NULL;
}

/* What one pass over the file found: the lines to keep (spans into buf)
 * and the ones to drop. */
struct span {
	size_t off, len;
	bool keep;
};

struct scan {
	char *buf;
	size_t len;
	struct span *v;
	size_t n;
	size_t partial_off; /* start of a trailing partial line, or len */
};

static void scan_free(struct scan *s)
{
	free(s->buf);
	free(s->v);
}

static int scan_file(const char *path, struct scan *s, struct sc_err *err)
{
	*s = (struct scan){0};
	s->buf = read_file(path, &s->len, err);
	if (!s->buf)
		return -1;
	size_t lines = 0;
	for (size_t i = 0; i < s->len; i++)
		lines += s->buf[i] == '\n';
	s->v = calloc(lines + 1, sizeof(*s->v));
	if (!s->v) {
		free(s->buf);
		return sc_fail(err, ENOMEM, "%s", path);
	}
	size_t off = 0;
	for (size_t i = 0; i < s->len; i++)
		if (s->buf[i] == '\n') {
			s->v[s->n++] = (struct span){.off = off, .len = i - off};
			off = i + 1;
		}
	s->partial_off = off;
	return 0;
}

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* Decide which lines to keep; the records kept go to out (may be NULL). */
static int classify(struct scan *s, bool drop_errors, struct batch_records *out,
		    struct batch_compact_stats *st)
{
	/* last occurrence of each key wins: walk backwards */
	struct batch_keyset seen = {0};
	struct batch_record *recs = calloc(s->n + 1, sizeof(*recs));
	if (!recs)
		return -1;
	int rc = 0;
	for (size_t k = s->n; k-- > 0;) {
		struct span *sp = &s->v[k];
		sp->keep = false;
		if (blank(s->buf + sp->off, sp->len))
			continue;
		struct batch_record r;
		if (batch_record_parse(s->buf + sp->off, sp->len, &r) < 0) {
			st->invalid++;
			continue;
		}
		if (batch_keyset_has(&seen, r.id, r.repeat)) {
			st->duplicate++;
			batch_record_free(&r);
			continue;
		}
		if (batch_keyset_add(&seen, r.id, r.repeat) < 0) {
			batch_record_free(&r);
			rc = -1;
			break;
		}
		if (drop_errors && !strcmp(r.status, "error")) {
			st->superseded++;
			batch_record_free(&r);
			continue;
		}
		sp->keep = true;
		recs[k] = r;
		st->kept++;
	}
	for (size_t k = 0; k < s->n; k++) {
		if (!s->v[k].keep)
			continue;
		if (rc == 0 && out && batch_records_push(out, &recs[k]) == 0)
			continue;
		batch_record_free(&recs[k]);
	}
	free(recs);
	batch_keyset_free(&seen);
	return rc;
}

int batch_results_read(const char *dir, struct batch_records *out, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/results.jsonl", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s", dir);
	struct scan s;
	if (scan_file(path, &s, err) < 0)
		return -1;
	struct batch_compact_stats st = {0};
	int rc = classify(&s, false, out, &st);
	scan_free(&s);
	return rc < 0 ? sc_fail(err, ENOMEM, "results") : 0;
}

static int write_all_fd(int fd, const char *p, size_t n, const char *path, struct sc_err *err)
{
	if (sc_write_all(fd, p, n) < 0)
		return sc_fail(err, errno, "cannot write %s", path);
	return 0;
}

int batch_results_compact(const char *dir, bool drop_errors, struct batch_records *out,
			  struct batch_compact_stats *st, struct sc_err *err)
{
	char path[SC_PATH_BUF], tmp[SC_PATH_BUF], old[SC_PATH_BUF];
	*st = (struct batch_compact_stats){0};
	if (sc_path(path, sizeof(path), "%s/results.jsonl", dir) < 0 ||
	    sc_path(tmp, sizeof(tmp), "%s/.results.jsonl.tmp", dir) < 0 ||
	    sc_path(old, sizeof(old), "%s/superseded.jsonl", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s", dir);
	struct scan s;
	if (scan_file(path, &s, err) < 0)
		return -1;
	int rc = -1;
	if (classify(&s, drop_errors, out, st) < 0) {
		sc_fail(err, ENOMEM, "results");
		goto done;
	}
	st->partial = s.partial_off < s.len;
	size_t dropped = 0;
	for (size_t k = 0; k < s.n; k++)
		dropped += !s.v[k].keep && !blank(s.buf + s.v[k].off, s.v[k].len);
	if (!st->partial && !dropped) {
		rc = 0; /* nothing to change */
		goto done;
	}
	/* What is dropped is kept in superseded.jsonl first: a crash between
	 * the two steps leaves it in both places, never in neither. */
	if (dropped) {
		_cleanup_fd_ int fd = open(old, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0) {
			sc_fail(err, errno, "cannot open %s", old);
			goto done;
		}
		for (size_t k = 0; k < s.n; k++)
			if (!s.v[k].keep && !blank(s.buf + s.v[k].off, s.v[k].len) &&
			    write_all_fd(fd, s.buf + s.v[k].off, s.v[k].len + 1, old, err) < 0)
				goto done;
		if (fdatasync(fd) < 0) {
			sc_fail(err, errno, "cannot sync %s", old);
			goto done;
		}
	}
	{
		_cleanup_fd_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0) {
			sc_fail(err, errno, "cannot create %s", tmp);
			goto done;
		}
		for (size_t k = 0; k < s.n; k++)
			if (s.v[k].keep && write_all_fd(fd, s.buf + s.v[k].off, s.v[k].len + 1, tmp, err) < 0)
				goto done;
		if (fdatasync(fd) < 0) {
			sc_fail(err, errno, "cannot sync %s", tmp);
			goto done;
		}
	}
	if (rename(tmp, path) < 0) {
		sc_fail(err, errno, "cannot replace %s", path);
		goto done;
	}
	{
		_cleanup_fd_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0)
			(void)fsync(dfd);
	}
	rc = 0;
done:
	scan_free(&s);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int batch_results_append(int fd, const char *line, size_t len, struct sc_err *err)
{
	char *buf = malloc(len + 1);
	if (!buf)
		return sc_fail(err, ENOMEM, "result line");
	memcpy(buf, line, len);
	buf[len] = '\n';
	/* one write() of the whole line: with O_APPEND it lands whole or,
	 * after a crash, as a partial last line that readers ignore */
	ssize_t n;
	do
		n = write(fd, buf, len + 1);
	while (n < 0 && errno == EINTR);
	int e = errno;
	free(buf);
	if (n != (ssize_t)(len + 1))
		return sc_fail(err, n < 0 ? e : EIO, "cannot append to results.jsonl");
	return 0;
}
