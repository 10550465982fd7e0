/* sandcell batch report: one self-contained HTML page of finished runs.
 *
 * sandcell writes data, the page draws it: every text from a run (answers,
 * observations, files: all hostile) goes into the page only as JSON inside
 * <script type="application/json"> blocks, with <, > and & written as
 * \u escapes so nothing in it can end the block or start a tag. The page's
 * own script (report_page.js, embedded) builds the header, the SVG charts,
 * the table and the episode views from that JSON with textContent and
 * createElementNS only, never as markup. A Content-Security-Policy allows
 * only the page's own script and style (by nonce) and data: images: no
 * inline handler, no request to anywhere.
 *
 * The page is streamed: each attempt's details are read, cut to the limits,
 * written and freed before the next; only the small index (one entry per
 * attempt) stays in memory until the end. Past inline_limit bytes of
 * details (or with split) an attempt's details go into a page of their
 * own, FILE.files/NNNNNN.html, linked from the table. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../agent/text.h"
#include "../common/base64.h"
#include "batch_priv.h"
#include "../common/jsonget.h"
#include "../common/parse.h"

extern const unsigned char batch_report_js[], batch_report_css[];
extern const size_t batch_report_js_size, batch_report_css_size;

#define TRAJECTORY_MAX (64U << 20)
#define CONVERSATION_REPORT_MAX (16U << 20)
#define MAX_STEPS_SHOWN 2000
#define MAX_DEPTH 8
#define TABLE_TEXT 200   /* bytes of answer/expected/error in the index */
#define MAX_LATENCIES 256 /* model calls per attempt in the latency chart */

struct ctx {
	const struct batch_report_options *o;
	struct batch_report_stats *st;
	char nonce[40];
};

/* ---- text ---- */

/* Whether s[0..len) is UTF-8 without NUL (a sequence cut at the very end
 * counts as valid when `cut`: its lead byte and the bytes after it that
 * are there). */
static bool utf8_text(const unsigned char *s, size_t len, bool cut)
{
	if (cut) {
		size_t whole = agent_text_utf8_whole((const char *)s, len);
		if (whole < len && (s[whole] < 0xC2 || s[whole] > 0xF4))
			return false;
		len = whole;
	}
	for (size_t i = 0, n; i < len; i += n)
		if (!s[i] || !(n = sc_utf8_len(s + i, len - i)))
			return false;
	return true;
}

/* Add key: s cut to max bytes; a cut also adds KEY_len (the whole length). */
static void add_cut(struct ctx *c, cJSON *o, const char *key, const char *s, size_t max)
{
	if (!s) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	size_t len = strlen(s), n = agent_text_utf8_prefix(s, len, max);
	if (n == len) {
		cJSON_AddStringToObject(o, key, s);
		return;
	}
	char *p = strndup(s, n);
	cJSON_AddStringToObject(o, key, p ? p : "");
	free(p);
	char lk[64];
	snprintf(lk, sizeof(lk), "%s_len", key);
	cJSON_AddNumberToObject(o, lk, (double)len);
	c->st->cut++;
}

/* A copy of v with every string cut to max bytes (and depth bounded). */
static cJSON *dup_cut(struct ctx *c, const cJSON *v, size_t max, int depth)
{
	if (depth > MAX_DEPTH)
		return cJSON_CreateString("(nested too deep)");
	if (cJSON_IsString(v)) {
		size_t len = strlen(v->valuestring), n = agent_text_utf8_prefix(v->valuestring, len, max);
		if (n == len)
			return cJSON_CreateString(v->valuestring);
		char *p = NULL;
		if (asprintf(&p, "%.*s\n[... cut: %zu of %zu bytes shown]", (int)n, v->valuestring, n,
			     len) < 0)
			return cJSON_CreateNull();
		c->st->cut++;
		cJSON *s = cJSON_CreateString(p);
		free(p);
		return s;
	}
	if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		cJSON *out = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
		size_t k = 0;
		for (const cJSON *x = v->child; x && k < 1000; x = x->next, k++) {
			cJSON *d = dup_cut(c, x, max, depth + 1);
			if (cJSON_IsArray(v))
				cJSON_AddItemToArray(out, d);
			else
				cJSON_AddItemToObject(out, x->string ? x->string : "", d);
		}
		return out;
	}
	return cJSON_Duplicate(v, false);
}

/* ---- output ---- */

/* JSON text with <, > and & as \u escapes: they occur only inside strings,
 * so this is still the same JSON, and it cannot close a <script>. */
static int put_json_text(FILE *f, const char *s)
{
	for (const char *p = s; *p; p++) {
		int r;
		switch (*p) {
		case '<':
			r = fputs("\\u003c", f);
			break;
		case '>':
			r = fputs("\\u003e", f);
			break;
		case '&':
			r = fputs("\\u0026", f);
			break;
		default:
			r = putc(*p, f);
		}
		if (r == EOF)
			return -1;
	}
	return 0;
}

/* An HTML attribute value (only our own ASCII names go here). */
static void put_attr(FILE *f, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '&')
			fputs("&amp;", f);
		else if (*p == '"')
			fputs("&quot;", f);
		else if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else
			putc(*p, f);
	}
}

static void page_head(FILE *f, const struct ctx *c, const char *title)
{
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		"script-src 'nonce-%s'; style-src 'nonce-%s'; img-src data:; base-uri 'none'; "
		"form-action 'none'\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<meta name=\"generator\" content=\"sandcell batch report\">\n<title>",
		c->nonce, c->nonce);
	put_attr(f, title);
	fprintf(f, "</title>\n<style nonce=\"%s\">\n", c->nonce);
	fwrite(batch_report_css, 1, batch_report_css_size, f);
	fputs("</style></head>\n<body>\n<noscript>This report draws itself with its own script; "
	      "allow scripts for this file to see it.</noscript>\n<div id=\"app\"></div>\n",
	      f);
}

static void page_tail(FILE *f, const struct ctx *c)
{
	fprintf(f, "<script nonce=\"%s\">\n", c->nonce);
	fwrite(batch_report_js, 1, batch_report_js_size, f);
	fputs("</script>\n</body></html>\n", f);
}

static int put_block(FILE *f, const char *id, const cJSON *j)
{
	char *text = cJSON_PrintUnformatted(j);
	if (!text)
		return -1;
	fputs("<script type=\"application/json\" id=\"", f);
	put_attr(f, id);
	fputs("\">", f);
	int r = put_json_text(f, text);
	fputs("</script>\n", f);
	free(text);
	return r;
}

/* ---- attempt files ---- */

/* The raster image type by its first bytes, or NULL. */
static const char *image_mime(const unsigned char *p, size_t n)
{
	if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
		return "image/png";
	if (n >= 3 && !memcmp(p, "\xff\xd8\xff", 3))
		return "image/jpeg";
	if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6)))
		return "image/gif";
	if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
		return "image/webp";
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcasecmp(s + a - b, suffix);
}

static void add_file(struct ctx *c, cJSON *arr, int dfd, const char *name, const char *path)
{
	const struct batch_report_options *o = c->o;
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", path);
	cJSON_AddNumberToObject(e, "size", (double)st.st_size);
	cJSON_AddItemToArray(arr, e);
	if (S_ISLNK(st.st_mode)) {
		char t[256];
		ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
		t[n > 0 ? n : 0] = '\0';
		cJSON_AddStringToObject(e, "kind", "symlink");
		add_cut(c, e, "target", t, sizeof(t));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		cJSON_AddStringToObject(e, "kind", "dir");
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		cJSON_AddStringToObject(e, "kind", "other");
		return;
	}
	_cleanup_fd_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st2;
	if (fd < 0 || fstat(fd, &st2) < 0 || !S_ISREG(st2.st_mode)) {
		cJSON_AddStringToObject(e, "kind", "unreadable");
		return;
	}
	size_t cap = o->max_text > o->max_image ? o->max_text : o->max_image;
	size_t want = (uint64_t)st2.st_size < cap ? (size_t)st2.st_size : cap;
	unsigned char *buf = malloc(want + 1);
	ssize_t n = buf ? sc_read_all(fd, buf, want) : -1;
	if (n < 0) {
		free(buf);
		cJSON_AddStringToObject(e, "kind", "unreadable");
		return;
	}
	size_t len = (size_t)n;
	bool whole = (uint64_t)len == (uint64_t)st2.st_size;
	const char *mime = image_mime(buf, len);
	bool svg = ends_with(name, ".svg") && utf8_text(buf, len, !whole);
	if (mime) {
		cJSON_AddStringToObject(e, "kind", "image");
		cJSON_AddStringToObject(e, "mime", mime);
		if (whole && len <= o->max_image) {
			char *b = sc_base64_encode(buf, len, NULL);
			if (b)
				cJSON_AddStringToObject(e, "data", b);
			free(b);
		} else {
			cJSON_AddBoolToObject(e, "too_large", true);
			c->st->cut++;
		}
	} else if (svg || utf8_text(buf, len, !whole)) {
		cJSON_AddStringToObject(e, "kind", svg ? "svg" : "text");
		/* an SVG is shown as an <img> (no script runs in an image) and
		 * as its source */
		if (svg && whole && len <= o->max_image) {
			char *b = sc_base64_encode(buf, len, NULL);
			if (b)
				cJSON_AddStringToObject(e, "data", b);
			free(b);
		}
		size_t keep = len < o->max_text ? len : o->max_text;
		if (keep < (size_t)st2.st_size)
			keep = agent_text_utf8_whole((char *)buf, keep);
		buf[keep] = '\0';
		cJSON_AddStringToObject(e, "text", (char *)buf);
		if (keep < (size_t)st2.st_size) {
			cJSON_AddBoolToObject(e, "cut", true);
			c->st->cut++;
		}
	} else {
		cJSON_AddStringToObject(e, "kind", "binary");
	}
	free(buf);
}

/* The files under dfd (not following symlinks), sorted, depth first. */
static void list_files(struct ctx *c, cJSON *arr, int dfd, const char *prefix, int depth,
		       bool *more)
{
	char **names;
	size_t n;
	if (sc_dir_names_sorted(dfd, 10000, &names, &n, more) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		if ((size_t)cJSON_GetArraySize(arr) >= c->o->max_files) {
			*more = true;
		} else if (sc_path(path, sizeof(path), "%s%s", prefix, names[i]) == 0) {
			add_file(c, arr, dfd, names[i], path);
			struct stat st;
			if (depth < MAX_DEPTH && fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode)) {
				_cleanup_fd_ int sub = openat(dfd, names[i],
							      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				char pre[4096];
				if (sub >= 0 && sc_path(pre, sizeof(pre), "%s/", path) == 0)
					list_files(c, arr, sub, pre, depth + 1, more);
			}
		}
	}
	sc_dir_names_free(names, n);
}

/* A small text file of the attempt (answer.txt, checker.log), cut. */
static void add_small(struct ctx *c, cJSON *o, const char *key, int afd, const char *name)
{
	_cleanup_fd_ int fd = openat(afd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	size_t want = (uint64_t)st.st_size < c->o->max_text ? (size_t)st.st_size : c->o->max_text;
	char *buf = malloc(want + 1);
	ssize_t n = buf ? sc_read_all(fd, buf, want) : -1;
	if (n >= 0) {
		size_t len = (size_t)n;
		if (!utf8_text((unsigned char *)buf, len, len < (uint64_t)st.st_size)) {
			cJSON_AddStringToObject(o, key, "(not text)");
		} else {
			if ((uint64_t)len < (uint64_t)st.st_size)
				len = agent_text_utf8_whole(buf, len);
			buf[len] = '\0';
			cJSON_AddStringToObject(o, key, buf);
			if ((uint64_t)len < (uint64_t)st.st_size) {
				char lk[64];
				snprintf(lk, sizeof(lk), "%s_len", key);
				cJSON_AddNumberToObject(o, lk, (double)st.st_size);
				c->st->cut++;
			}
		}
	}
	free(buf);
}

/* ---- one attempt ---- */

static void add_steps(struct ctx *c, cJSON *d, const cJSON *traj, cJSON *lat)
{
	const struct batch_report_options *o = c->o;
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(traj, "steps");
	cJSON *out = cJSON_AddArrayToObject(d, "steps");
	size_t k = 0;
	for (const cJSON *s = cJSON_IsArray(steps) ? steps->child : NULL; s; s = s->next, k++) {
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(s, "metadata");
		double llm = sc_json_num(md, "llm_time", NAN);
		if (!isnan(llm) && cJSON_GetArraySize(lat) < MAX_LATENCIES)
			cJSON_AddItemToArray(lat, cJSON_CreateNumber(llm));
		if (k >= MAX_STEPS_SHOWN) {
			continue;
		}
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToArray(out, e);
		cJSON_AddNumberToObject(e, "step", sc_json_num(md, "step", (double)k + 1));
		add_cut(c, e, "thought", sc_json_str(s, "thought"), o->max_text);
		const char *rc = sc_json_str(s, "reasoning_content");
		if (rc && *rc)
			add_cut(c, e, "reasoning", rc, o->max_text);
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(s, "action");
		add_cut(c, e, "fn", sc_json_str(act, "function"), 256);
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(act, "parameters");
		if (params)
			cJSON_AddItemToObject(e, "args", dup_cut(c, params, o->max_text, 0));
		add_cut(c, e, "obs", sc_json_str(s, "observation"), o->max_observation);
		if (!isnan(sc_json_num(md, "exec_time", NAN)))
			cJSON_AddNumberToObject(e, "exec", sc_json_num(md, "exec_time", 0));
		if (!isnan(llm))
			cJSON_AddNumberToObject(e, "llm", llm);
	}
	if (k > MAX_STEPS_SHOWN)
		cJSON_AddNumberToObject(d, "steps_not_shown", (double)(k - MAX_STEPS_SHOWN));
}

static void add_prompts(struct ctx *c, cJSON *d, const struct batch_record *r)
{
	cJSON *conv = batch_load_conversation(r, CONVERSATION_REPORT_MAX);
	cJSON *msgs = conv ? batch_conversation_openai(conv, NULL) : NULL;
	cJSON_Delete(conv);
	const char *sys = NULL, *user = NULL;
	for (const cJSON *m = msgs ? msgs->child : NULL; m; m = m->next) {
		const char *role = sc_json_str(m, "role");
		if (!role)
			continue;
		if (!sys && !user && !strcmp(role, "system"))
			sys = sc_json_str(m, "content");
		else if (!user && !strcmp(role, "user"))
			user = sc_json_str(m, "content");
		if (user)
			break;
	}
	if (sys)
		add_cut(c, d, "system", sys, c->o->max_text);
	if (user)
		add_cut(c, d, "user", user, c->o->max_text);
	cJSON_Delete(msgs);
}

static void add_note(cJSON *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(cJSON *d, const char *fmt, ...)
{
	cJSON *notes = cJSON_GetObjectItemCaseSensitive(d, "notes");
	if (!notes)
		notes = cJSON_AddArrayToObject(d, "notes");
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(notes, cJSON_CreateString(buf));
}

/* The details of attempt i; lat gets its model-call latencies. */
static cJSON *attempt_detail(struct ctx *c, const struct batch_record *r, size_t i, cJSON *lat)
{
	const struct batch_report_options *o = c->o;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "i", (double)i);
	cJSON_AddStringToObject(d, "id", r->id);
	cJSON_AddNumberToObject(d, "repeat", r->repeat);
	cJSON_AddStringToObject(d, "status", r->status);
	if (r->scored)
		cJSON_AddNumberToObject(d, "score", r->score);
	else
		cJSON_AddNullToObject(d, "score");
	add_cut(c, d, "scorer", sc_json_str(r->json, "scorer"), 64);
	add_cut(c, d, "expected", sc_json_str(r->json, "expected"), o->max_text);
	add_cut(c, d, "answer", sc_json_str(r->json, "answer"), o->max_text);
	add_cut(c, d, "error", sc_json_str(r->json, "error"), o->max_text);
	cJSON_AddNumberToObject(d, "steps_n", r->steps);
	cJSON_AddNumberToObject(d, "wall_s", r->wall_s);
	if (r->group >= 0) {
		cJSON_AddNumberToObject(d, "group", (double)r->group);
		cJSON_AddNumberToObject(d, "group_size", sc_json_num(r->json, "group_size", 0));
		cJSON_AddNumberToObject(d, "setup_s", r->setup_s);
		add_cut(c, d, "setup_run", r->setup_run, 64);
	}
	cJSON_AddNumberToObject(d, "input_tokens", (double)r->input_tokens);
	cJSON_AddNumberToObject(d, "output_tokens", (double)r->output_tokens);
	if (r->run)
		add_cut(c, d, "run", r->run, 1024);
	add_cut(c, d, "dir", r->dir, 1024);

	char rundir[SC_PATH_BUF];
	if (!r->dir || !r->run || r->dir[0] == '/' || strstr(r->dir, "..") ||
	    sc_path(rundir, sizeof(rundir), "%s", r->run) < 0) {
		add_note(d, "the result names no attempt directory");
		return d;
	}
	_cleanup_fd_ int rfd = open(rundir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_fd_ int afd = rfd >= 0 ? sc_openat_beneath(rfd, r->dir, O_RDONLY | O_DIRECTORY, 0, 0)
					: -1;
	if (afd < 0) {
		add_note(d, "the attempt directory %.300s is missing", r->dir);
		return d;
	}
	add_prompts(c, d, r);
	_cleanup_fd_ int tfd = openat(afd, "trajectory.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *text = NULL;
	size_t tlen = 0;
	struct sc_err e2 = {0};
	if (tfd < 0) {
		add_note(d, "no trajectory.json");
	} else if (sc_read_small_alloc_fd(tfd, "trajectory.json", SC_READ_REGULAR, TRAJECTORY_MAX,
					  &text, &tlen, &e2) < 0) {
		add_note(d, "trajectory.json not shown: %s", e2.msg);
	} else {
		cJSON *traj = cJSON_ParseWithLength(text, tlen);
		free(text);
		if (!traj) {
			add_note(d, "trajectory.json is not JSON");
		} else {
			if (!cJSON_GetObjectItemCaseSensitive(d, "user"))
				add_cut(c, d, "user", sc_json_str(traj, "problem_statement"), o->max_text);
			add_steps(c, d, traj, lat);
			const cJSON *tm = cJSON_GetObjectItemCaseSensitive(traj, "timings");
			if (cJSON_IsObject(tm))
				cJSON_AddItemToObject(d, "timings", dup_cut(c, tm, 64, 1));
			const cJSON *md = cJSON_GetObjectItemCaseSensitive(traj, "model");
			if (cJSON_IsObject(md))
				cJSON_AddItemToObject(d, "model", dup_cut(c, md, 512, 1));
			cJSON_Delete(traj);
		}
	}
	add_small(c, d, "answer_file", afd, "answer.txt");
	add_small(c, d, "reason", afd, "checker.log");
	_cleanup_fd_ int ffd = openat(afd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ffd >= 0) {
		cJSON *files = cJSON_AddArrayToObject(d, "files");
		bool more = false;
		list_files(c, files, ffd, "", 0, &more);
		if (more)
			add_note(d, "more files than the %zu listed", o->max_files);
	}
	return d;
}

/* ---- runs ---- */

struct run {
	struct batch_records rs;
	cJSON *dirs;          /* array of directory names */
	char *mode, *model, *tasks_file;
	size_t expected;
	struct batch_keyset keys;
};

/* batch.json of dir, else of its first shard-* directory. */
static cJSON *batch_json(const char *dir)
{
	char path[SC_PATH_BUF];
	char *text = NULL;
	size_t len;
	if (sc_path(path, sizeof(path), "%s/batch.json", dir) == 0 &&
	    sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, 1U << 20, &text,
				&len, NULL) == 0) {
		cJSON *j = cJSON_ParseWithLength(text, len);
		free(text);
		return j;
	}
	DIR *d = opendir(dir);
	char best[256] = "";
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "shard-", 6) && strlen(e->d_name) < sizeof(best) &&
		    (!best[0] || strcmp(e->d_name, best) < 0))
			snprintf(best, sizeof(best), "%s", e->d_name);
	if (d)
		closedir(d);
	if (!best[0] || sc_path(path, sizeof(path), "%s/%s", dir, best) < 0)
		return NULL;
	return batch_json(path);
}

static char *dup_field(const cJSON *j, const char *k)
{
	const char *s = sc_json_str(j, k);
	return strdup(s ? s : "");
}

static void run_free(struct run *r)
{
	batch_records_free(&r->rs);
	batch_keyset_free(&r->keys);
	cJSON_Delete(r->dirs);
	free(r->mode);
	free(r->model);
	free(r->tasks_file);
}

static bool overlaps(const struct run *r, const struct batch_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (batch_keyset_has(&r->keys, rs->v[i].id, rs->v[i].repeat))
			return true;
	return false;
}

static int take(struct run *r, struct batch_records *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		if (batch_records_push(&r->rs, &rs->v[i]) < 0)
			return -1;
		batch_keyset_add(&r->keys, rs->v[i].id, rs->v[i].repeat);
	}
	free(rs->v);
	*rs = (struct batch_records){0};
	return 0;
}

/* The runs of dirs: a directory joins the first run it fits (same mode and
 * model, no attempt in common), else starts one. */
static int group_runs(const char *const *dirs, size_t ndirs, struct run **out, size_t *nout,
		      struct sc_err *err)
{
	struct run *runs = calloc(ndirs, sizeof(*runs));
	size_t n = 0;
	if (!runs)
		return sc_fail(err, ENOMEM, "report");
	for (size_t i = 0; i < ndirs; i++) {
		struct batch_records rs;
		size_t expected;
		if (batch_collect_into(&dirs[i], 1, &rs, &expected, err) < 0)
			goto fail;
		cJSON *bj = batch_json(dirs[i]);
		char *mode = dup_field(bj, "mode"), *model = dup_field(bj, "model");
		if (!*mode && rs.n)
			free(mode), mode = dup_field(rs.v[0].json, "mode");
		size_t k = 0;
		for (; k < n; k++)
			if (!strcmp(runs[k].mode, mode) && !strcmp(runs[k].model, model) &&
			    !overlaps(&runs[k], &rs))
				break;
		struct run *r = &runs[k];
		if (k == n) {
			n++;
			r->dirs = cJSON_CreateArray();
			r->mode = mode;
			r->model = model;
			r->tasks_file = dup_field(bj, "tasks_file");
		} else {
			free(mode);
			free(model);
		}
		cJSON_Delete(bj);
		cJSON_AddItemToArray(r->dirs, cJSON_CreateString(dirs[i]));
		r->expected += expected;
		if (take(r, &rs) < 0) {
			batch_records_free(&rs);
			sc_fail(err, ENOMEM, "report");
			goto fail;
		}
	}
	*out = runs;
	*nout = n;
	return 0;
fail:
	for (size_t k = 0; k < n; k++)
		run_free(&runs[k]);
	free(runs);
	return -1;
}

static cJSON *summary_json(const struct run *r)
{
	struct batch_summary s;
	batch_summarize(&r->rs, &s);
	s.expected_attempts = r->expected;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return cJSON_CreateObject();
	batch_summary_json(m, &s);
	fclose(m);
	cJSON *j = buf ? cJSON_Parse(buf) : NULL;
	free(buf);
	if (j)
		cJSON_AddNumberToObject(j, "total_wall_s", s.total_wall_s);
	return j ? j : cJSON_CreateObject();
}

static cJSON *index_entry(struct ctx *c, const struct batch_record *r, size_t run, cJSON *lat)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddNumberToObject(e, "r", (double)run);
	cJSON_AddStringToObject(e, "id", r->id);
	cJSON_AddNumberToObject(e, "rep", r->repeat);
	cJSON_AddStringToObject(e, "st", r->status);
	if (r->scored)
		cJSON_AddNumberToObject(e, "sc", r->score);
	else
		cJSON_AddNullToObject(e, "sc");
	add_cut(c, e, "exp", sc_json_str(r->json, "expected"), TABLE_TEXT);
	add_cut(c, e, "ans", sc_json_str(r->json, "answer"), TABLE_TEXT);
	add_cut(c, e, "err", sc_json_str(r->json, "error"), TABLE_TEXT);
	cJSON_AddNumberToObject(e, "steps", r->steps);
	cJSON_AddNumberToObject(e, "in", (double)r->input_tokens);
	cJSON_AddNumberToObject(e, "out", (double)r->output_tokens);
	cJSON_AddNumberToObject(e, "wall", r->wall_s);
	cJSON_AddItemToObject(e, "lat", lat);
	return e;
}

/* ---- the page ---- */

static int side_page(struct ctx *c, const char *path, const cJSON *detail, const char *title,
		     struct sc_err *err)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return sc_fail(err, errno, "cannot create %s", path);
	page_head(f, c, title);
	put_block(f, "sc-detail", detail);
	page_tail(f, c);
	if (ferror(f) | (fclose(f) != 0))
		return sc_fail(err, errno ? errno : EIO, "cannot write %s", path);
	return 0;
}

static void make_nonce(char *out, size_t size)
{
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no entropy: the nonce only has to be one the content does not
		 * carry, and the content is escaped anyway */
		uint64_t t = (uint64_t)(sc_now() * 1e9) ^ (uint64_t)getpid();
		memcpy(r, &t, 8);
		memcpy(r + 8, &t, 8);
	}
	for (size_t i = 0; i < sizeof(r) && 2 * i + 2 < size; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Where a report goes: FILE.html (written as FILE.html.tmp, then renamed)
 * and its side pages in FILE.files/. */
struct page {
	char stem[SC_PATH_BUF], side[4096], tmp[SC_PATH_BUF];
	char back[600];       /* a side page's link back to FILE.html */
	FILE *f;
	uint64_t inline_bytes; /* of details in FILE.html so far */
	bool side_made;
};

static int page_paths(struct page *p, const char *out, struct sc_err *err)
{
	size_t ol = strlen(out);
	if (ol >= sizeof(p->stem))
		return sc_fail(err, ENAMETOOLONG, "report %.100s", out);
	memcpy(p->stem, out, ol + 1);
	if (ends_with(p->stem, ".html"))
		p->stem[ol - 5] = '\0';
	else if (ends_with(p->stem, ".htm"))
		p->stem[ol - 4] = '\0';
	if (sc_path(p->side, sizeof(p->side), "%s.files", p->stem) < 0 ||
	    sc_path(p->tmp, sizeof(p->tmp), "%s.tmp", out) < 0)
		return sc_fail(err, ENAMETOOLONG, "report %.100s", out);
	snprintf(p->back, sizeof(p->back), "../%.500s", base_name(out));
	return 0;
}

/* The index: when and with which limits the page was made; its runs and
 * attempts arrays are filled as the runs are written. */
static cJSON *index_new(const struct batch_report_options *o)
{
	cJSON *index = cJSON_CreateObject();
	cJSON_AddStringToObject(index, "generator", "sandcell batch report");
	char when[64];
	time_t now = time(NULL);
	struct tm tmv;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tmv));
	cJSON_AddStringToObject(index, "generated", when);
	cJSON *lim = cJSON_AddObjectToObject(index, "limits");
	cJSON_AddNumberToObject(lim, "max_observation", (double)o->max_observation);
	cJSON_AddNumberToObject(lim, "max_text", (double)o->max_text);
	cJSON_AddNumberToObject(lim, "max_image", (double)o->max_image);
	cJSON_AddNumberToObject(lim, "max_files", (double)o->max_files);
	cJSON_AddNumberToObject(lim, "table_text", TABLE_TEXT);
	cJSON_AddArrayToObject(index, "runs");
	cJSON_AddArrayToObject(index, "attempts");
	return index;
}

/* Attempt ai's details d in a page of its own, linked from its entry e. */
static int put_side_page(struct ctx *c, struct page *p, size_t ai, cJSON *d, cJSON *e,
			 struct sc_err *err)
{
	char name[32], path[SC_PATH_BUF], rel[SC_PATH_BUF], title[300];
	if (!p->side_made && mkdir(p->side, 0755) < 0 && errno != EEXIST)
		return sc_fail(err, errno, "cannot create %s", p->side);
	p->side_made = true;
	snprintf(name, sizeof(name), "%06zu.html", ai);
	snprintf(path, sizeof(path), "%s/%s", p->side, name);
	snprintf(rel, sizeof(rel), "%s.files/%s", base_name(p->stem), name);
	snprintf(title, sizeof(title), "attempt %zu - sandcell batch report", ai);
	cJSON_AddStringToObject(d, "back", p->back);
	if (side_page(c, path, d, title, err) < 0)
		return -1;
	cJSON_AddStringToObject(e, "f", rel);
	c->st->side_files++;
	return 0;
}

/* One attempt of run k: its index entry, and its details inline until
 * inline_limit (or with split), else in a side page. */
static int put_attempt(struct ctx *c, struct page *p, const struct batch_record *rec, size_t k,
		       cJSON *jatt, struct sc_err *err)
{
	const struct batch_report_options *o = c->o;
	size_t ai = c->st->attempts++;
	cJSON *lat = cJSON_CreateArray();
	cJSON *d = attempt_detail(c, rec, ai, lat);
	cJSON *e = index_entry(c, rec, k, lat);
	cJSON_AddItemToArray(jatt, e);
	char *text = cJSON_PrintUnformatted(d);
	if (!text) {
		cJSON_Delete(d);
		return sc_fail(err, ENOMEM, "report");
	}
	size_t tl = strlen(text);
	free(text);
	int rc = 0;
	if (!o->split && p->inline_bytes + tl <= o->inline_limit) {
		char id[32];
		snprintf(id, sizeof(id), "sc-d-%zu", ai);
		put_block(p->f, id, d);
		p->inline_bytes += tl;
		cJSON_AddBoolToObject(e, "d", true);
	} else {
		rc = put_side_page(c, p, ai, d, e, err);
	}
	cJSON_Delete(d);
	return rc;
}

static int put_run(struct ctx *c, struct page *p, const struct run *r, size_t k, cJSON *index,
		   struct sc_err *err)
{
	cJSON *jr = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(index, "runs"), jr);
	cJSON_AddItemReferenceToObject(jr, "dirs", r->dirs);
	add_cut(c, jr, "model", r->model, 256);
	add_cut(c, jr, "mode", r->mode, 64);
	add_cut(c, jr, "tasks_file", r->tasks_file, 1024);
	cJSON_AddItemToObject(jr, "summary", summary_json(r));
	cJSON *jatt = cJSON_GetObjectItemCaseSensitive(index, "attempts");
	for (size_t i = 0; i < r->rs.n; i++)
		if (put_attempt(c, p, &r->rs.v[i], k, jatt, err) < 0)
			return -1;
	return 0;
}

/* The index and the page's end, then FILE.html.tmp renamed to FILE.html. */
static int page_finish(struct ctx *c, struct page *p, const cJSON *index, struct sc_err *err)
{
	if (put_block(p->f, "sc-index", index) < 0)
		return sc_fail(err, ENOMEM, "report");
	page_tail(p->f, c);
	fflush(p->f);
	long end = ftell(p->f);
	c->st->bytes = end > 0 ? (uint64_t)end : 0;
	bool bad = ferror(p->f);
	int cr = fclose(p->f);
	p->f = NULL;
	if (bad || cr != 0) {
		sc_fail(err, errno ? errno : EIO, "cannot write %s", p->tmp);
		unlink(p->tmp);
		return -1;
	}
	if (rename(p->tmp, c->o->out) < 0) {
		sc_fail(err, errno, "cannot rename %s to %s", p->tmp, c->o->out);
		unlink(p->tmp);
		return -1;
	}
	return 0;
}

static int write_report(struct ctx *c, struct page *p, const struct run *runs, size_t nruns,
			struct sc_err *err)
{
	struct batch_report_stats *st = c->st;
	/* the side pages of an earlier report of this name */
	if (page_paths(p, c->o->out, err) < 0 || sc_remove_tree_path(p->side, err) < 0)
		return -1;
	snprintf(st->side_dir, sizeof(st->side_dir), "%s", p->side);
	p->f = fopen(p->tmp, "we");
	if (!p->f)
		return sc_fail(err, errno, "cannot create %s", p->tmp);
	page_head(p->f, c, "sandcell batch report");
	cJSON *index = index_new(c->o);
	int rc = 0;
	for (size_t k = 0; k < nruns && rc == 0; k++)
		rc = put_run(c, p, &runs[k], k, index, err);
	if (rc == 0)
		rc = page_finish(c, p, index, err);
	cJSON_Delete(index);
	if (rc == 0 && !st->side_files)
		st->side_dir[0] = '\0';
	return rc;
}

int batch_report(const char *const *dirs, size_t ndirs, const struct batch_report_options *o,
		 struct batch_report_stats *st, struct sc_err *err)
{
	*st = (struct batch_report_stats){0};
	struct ctx c = {.o = o, .st = st};
	make_nonce(c.nonce, sizeof(c.nonce));
	struct run *runs = NULL;
	size_t nruns = 0;
	if (group_runs(dirs, ndirs, &runs, &nruns, err) < 0)
		return -1;
	st->runs = nruns;
	struct page p = {0};
	int rc = write_report(&c, &p, runs, nruns, err);
	if (p.f) {
		fclose(p.f);
		unlink(p.tmp);
	}
	for (size_t k = 0; k < nruns; k++)
		run_free(&runs[k]);
	free(runs);
	return rc;
}
