/* The task file of sandcell batch (JSON Lines), stable hashes and shards. */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/hash.h"
#include "batch_priv.h"

/* Fields a task may not carry because results use these names. */
static const char *const RESERVED[] = {"repeat", "status", "score", "expected", "steps",
				       "input_tokens", "output_tokens", "wall_s", "error",
				       "mode", "dir", "shard", "store_image", "group",
				       "group_size", "setup_s", "setup_run"};
static const char *const KNOWN[] = {"id", "problem", "input_dir", "answer", "scorer", "metadata",
				    "image", "setup"};

bool batch_image_name_valid(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > BATCH_MAX_IMAGE)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return false;
	return true;
}

uint64_t batch_hash(const char *s)
{
	return sc_fnv1a64(s);
}

int batch_shard_parse(const char *s, unsigned *index, unsigned *count)
{
	char *end;
	errno = 0;
	unsigned long i = strtoul(s, &end, 10);
	if (end == s || *end != '/' || errno)
		return -1;
	const char *c = end + 1;
	unsigned long n = strtoul(c, &end, 10);
	if (end == c || *end || errno || n == 0 || n > 100000 || i >= n || s[0] == '-' || c[0] == '-')
		return -1;
	*index = (unsigned)i;
	*count = (unsigned)n;
	return 0;
}

static bool env_uint(const char *name, unsigned long *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return false;
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (*end || errno || v[0] == '-')
		return false;
	*out = x;
	return true;
}

int batch_shard_from_env(unsigned shards, unsigned *index, unsigned *count, struct sc_err *err)
{
	unsigned long id, n, min = 0, step = 1, k8s;
	if (env_uint("SLURM_ARRAY_TASK_ID", &id)) {
		if (!env_uint("SLURM_ARRAY_TASK_COUNT", &n) || n == 0)
			return sc_fail(err, 0, "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT "
					       "is not; pass --shard I/N");
		env_uint("SLURM_ARRAY_TASK_MIN", &min);
		if (!env_uint("SLURM_ARRAY_TASK_STEP", &step) || step == 0)
			step = 1;
		if (id < min || (id - min) % step || (id - min) / step >= n)
			return sc_fail(err, 0, "SLURM_ARRAY_TASK_ID %lu is not one of %lu tasks from %lu "
					       "by %lu; pass --shard I/N", id, n, min, step);
		*index = (unsigned)((id - min) / step);
		*count = (unsigned)n;
		return 1;
	}
	if (env_uint("JOB_COMPLETION_INDEX", &k8s)) {
		if (!shards)
			return sc_fail(err, 0, "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job): "
					       "pass --shards N with the Job's completions, or --shard I/N");
		if (k8s >= shards)
			return sc_fail(err, 0, "JOB_COMPLETION_INDEX %lu is not below --shards %u", k8s,
				       shards);
		*index = (unsigned)k8s;
		*count = shards;
		return 1;
	}
	return 0;
}

void batch_safe_name(const char *id, char *out, size_t size)
{
	size_t n = strlen(id);
	bool safe = n > 0 && n <= 100 && strcmp(id, ".") && strcmp(id, "..");
	for (size_t i = 0; safe && i < n; i++)
		safe = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		       (id[i] >= '0' && id[i] <= '9') || id[i] == '.' || id[i] == '_' || id[i] == '-';
	/* a safe id shaped like a mapped one ("x_y-<16 hex>") is mapped too:
	 * kept as it is, it would be the directory of the id it looks like
	 * ("x/y"), and two tasks would share (and delete) one attempt */
	if (safe && n > 17 && id[n - 17] == '-') {
		bool hex = true;
		for (size_t i = n - 16; hex && i < n; i++)
			hex = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
		safe = !hex;
	}
	if (safe && id[0] != '.') {
		snprintf(out, size, "%s", id);
		return;
	}
	char clean[64];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 48; i++) {
		char c = id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-';
		clean[k++] = ok ? c : '_';
	}
	clean[k] = '\0';
	snprintf(out, size, "%s-%016llx", clean, (unsigned long long)batch_hash(id));
}

/* ---- one line ---- */

static bool is_reserved(const char *name)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(RESERVED); i++)
		if (!strcmp(name, RESERVED[i]))
			return true;
	return false;
}

static bool is_known(const char *name)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(KNOWN); i++)
		if (!strcmp(name, KNOWN[i]))
			return true;
	return false;
}

/* The expected answer as text: a string as is, a number as printed, a
 * list of strings joined with ",". */
static char *answer_text(const cJSON *a)
{
	if (cJSON_IsString(a))
		return strdup(a->valuestring);
	if (cJSON_IsNumber(a) || cJSON_IsBool(a))
		return cJSON_PrintUnformatted(a);
	if (cJSON_IsArray(a)) {
		if (!a->child)
			return strdup("");
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (!m)
			return NULL;
		for (const cJSON *e = a->child; e; e = e->next) {
			if (e != a->child)
				fputs(",", m);
			if (cJSON_IsString(e))
				fputs(e->valuestring, m);
			else {
				_cleanup_free_ char *t = cJSON_PrintUnformatted(e);
				fputs(t ? t : "", m);
			}
		}
		if (ferror(m) | fclose(m)) {
			free(text);
			return NULL;
		}
		return text;
	}
	return NULL;
}

static char *resolve_path(const char *base_dir, const char *p)
{
	char *out = NULL;
	if (p[0] == '/' || !base_dir)
		return strdup(p);
	if (asprintf(&out, "%s/%s", base_dir, p) < 0)
		return NULL;
	return out;
}

static int parse_scorer(const cJSON *v, const char *base_dir, struct batch_task *t, char *why,
			size_t whysize)
{
	const char *name = NULL;
	const cJSON *obj = NULL;
	if (cJSON_IsString(v)) {
		name = v->valuestring;
	} else if (cJSON_IsObject(v)) {
		obj = v;
		const cJSON *ty = cJSON_GetObjectItemCaseSensitive(v, "type");
		name = cJSON_IsString(ty) ? ty->valuestring : NULL;
	}
	if (!name || batch_scorer_kind_parse(name, &t->scorer.kind) < 0) {
		snprintf(why, whysize, "\"scorer\": expected one of exact, numeric, choice, boxed, "
				       "contains, command (a name or {\"type\": NAME, ...})");
		return -1;
	}
	t->has_scorer = true;
	t->scorer.tolerance = BATCH_DEFAULT_TOLERANCE;
	t->scorer.timeout_s = BATCH_DEFAULT_CHECKER_TIMEOUT;
	if (!obj)
		return 0;
	const cJSON *tol = cJSON_GetObjectItemCaseSensitive(obj, "tolerance");
	if (tol) {
		if (!cJSON_IsNumber(tol) || !(tol->valuedouble >= 0) || tol->valuedouble > 1) {
			snprintf(why, whysize, "\"scorer\".\"tolerance\": expected a number from 0 to 1");
			return -1;
		}
		t->scorer.tolerance = tol->valuedouble;
	}
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(obj, "command");
	if (cmd) {
		if (!cJSON_IsString(cmd) || !*cmd->valuestring || strlen(cmd->valuestring) > 65536) {
			snprintf(why, whysize, "\"scorer\".\"command\": expected a shell command");
			return -1;
		}
		t->scorer.command = t->scorer_command = strdup(cmd->valuestring);
	}
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(obj, "files");
	if (files) {
		struct stat st;
		if (!cJSON_IsString(files) || !(t->scorer_files = resolve_path(base_dir, files->valuestring)) ||
		    stat(t->scorer_files, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(why, whysize, "\"scorer\".\"files\": not a directory");
			return -1;
		}
		t->scorer.files = t->scorer_files;
	}
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(obj, "timeout");
	if (to) {
		if (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400) {
			snprintf(why, whysize, "\"scorer\".\"timeout\": expected seconds");
			return -1;
		}
		t->scorer.timeout_s = to->valuedouble;
	}
	return 0; /* a command scorer without command takes the run's --checker */
}

/* A setup file's path: at most BATCH_MAX_SETUP_PATH bytes, no control
 * characters, no "." or ".." component, no empty one; relative paths are
 * under /testbed. NULL when refused. */
static char *setup_path(const char *p)
{
	size_t n = strlen(p);
	if (!n || n > BATCH_MAX_SETUP_PATH)
		return NULL;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return NULL;
	const char *c = p + (p[0] == '/');
	for (;;) {
		const char *e = strchrnul(c, '/');
		size_t len = (size_t)(e - c);
		if (!len || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return NULL;
		if (!*e)
			break;
		c = e + 1;
	}
	char *out = NULL;
	if (asprintf(&out, "%s%s", p[0] == '/' ? "" : "/testbed/", p) < 0)
		return NULL;
	return out;
}

void batch_setup_free(struct batch_setup *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].data);
	}
	free(s->files);
	free(s->command);
	free(s);
}

static int setup_command(const cJSON *cmd, struct batch_setup *s, char *why, size_t whysize)
{
	if (!cmd || cJSON_IsNull(cmd))
		return 0;
	if (!cJSON_IsString(cmd) || !*cmd->valuestring || strlen(cmd->valuestring) > 65536) {
		snprintf(why, whysize, "\"setup\".\"command\": expected a shell command of at most "
				       "65536 bytes");
		return -1;
	}
	s->command = strdup(cmd->valuestring);
	return s->command ? 0 : -1;
}

static int setup_files(const cJSON *files, struct batch_setup *s, char *why, size_t whysize)
{
	if (!files || cJSON_IsNull(files))
		return 0;
	size_t n = (size_t)cJSON_GetArraySize(files), total = 0;
	if (!cJSON_IsObject(files) || n > BATCH_MAX_SETUP_FILES) {
		snprintf(why, whysize, "\"setup\".\"files\": expected an object of at most %u "
				       "paths to their text", BATCH_MAX_SETUP_FILES);
		return -1;
	}
	if (!(s->files = calloc(n + 1, sizeof(*s->files))))
		return -1;
	for (const cJSON *f = files->child; f; f = f->next) {
		struct batch_setup_file *sf = &s->files[s->nfiles];
		if (!cJSON_IsString(f) || !(sf->path = setup_path(f->string))) {
			snprintf(why, whysize, "\"setup\".\"files\": \"%.100s\" is no file path (at "
					       "most %u bytes, no \".\" or \"..\" parts) with text",
				 f->string, BATCH_MAX_SETUP_PATH);
			return -1;
		}
		s->nfiles++;
		sf->len = strlen(f->valuestring);
		if ((total += sf->len) > BATCH_MAX_SETUP_BYTES) {
			snprintf(why, whysize, "\"setup\".\"files\": more than %u bytes together",
				 BATCH_MAX_SETUP_BYTES);
			return -1;
		}
		if (!(sf->data = strdup(f->valuestring)))
			return -1;
	}
	return 0;
}

static int setup_timeout(const cJSON *to, struct batch_setup *s, char *why, size_t whysize)
{
	s->timeout_s = BATCH_DEFAULT_SETUP_TIMEOUT;
	if (!to)
		return 0;
	if (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400) {
		snprintf(why, whysize, "\"setup\".\"timeout\": expected seconds (at most 86400)");
		return -1;
	}
	s->timeout_s = to->valuedouble;
	return 0;
}

/* "setup": a command, or {"command"?, "files"?, "timeout"?} with one of
 * the first two. */
static int parse_setup(const cJSON *v, struct batch_task *t, char *why, size_t whysize)
{
	struct batch_setup *s = calloc(1, sizeof(*s));
	why[0] = '\0';
	if (!s)
		goto oom;
	t->setup = s;
	if (cJSON_IsString(v)) {
		if (setup_command(v, s, why, whysize) < 0)
			goto fail;
		s->timeout_s = BATCH_DEFAULT_SETUP_TIMEOUT;
		return 0;
	}
	if (!cJSON_IsObject(v)) {
		snprintf(why, whysize, "\"setup\": expected a command or {\"command\", \"files\", "
				       "\"timeout\"}");
		return -1;
	}
	for (const cJSON *f = v->child; f; f = f->next)
		if (strcmp(f->string, "command") && strcmp(f->string, "files") &&
		    strcmp(f->string, "timeout")) {
			snprintf(why, whysize, "\"setup\": unknown field \"%.100s\" (command, files, "
					       "timeout)", f->string);
			return -1;
		}
	if (setup_command(cJSON_GetObjectItemCaseSensitive(v, "command"), s, why, whysize) < 0 ||
	    setup_files(cJSON_GetObjectItemCaseSensitive(v, "files"), s, why, whysize) < 0 ||
	    setup_timeout(cJSON_GetObjectItemCaseSensitive(v, "timeout"), s, why, whysize) < 0)
		goto fail;
	if (!s->command && !s->nfiles) {
		snprintf(why, whysize, "\"setup\": give a \"command\" or \"files\"");
		return -1;
	}
	return 0;
fail:
	if (why[0])
		return -1;
oom:
	snprintf(why, whysize, "out of memory");
	return -1;
}

int batch_task_id(const cJSON *task, const char *key, char **out, char *why, size_t whysize)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(task, key);
	*out = NULL;
	if (cJSON_IsString(id) && *id->valuestring)
		*out = strdup(id->valuestring);
	else if (cJSON_IsNumber(id) && id->valuedouble == floor(id->valuedouble) &&
		 fabs(id->valuedouble) < 1e15)
		(void)!asprintf(out, "%.0f", id->valuedouble);
	if (!*out) {
		snprintf(why, whysize, "no \"%s\" (a non-empty string or an integer)", key);
		return -1;
	}
	bool ctl = false;
	for (const char *p = *out; *p; p++)
		ctl = ctl || (unsigned char)*p < 0x20 || *p == 0x7f;
	if (strlen(*out) > BATCH_MAX_ID || ctl) {
		snprintf(why, whysize, "\"%s\": at most %u bytes, no control characters", key,
			 BATCH_MAX_ID);
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

const cJSON *batch_task_problem(const cJSON *task, const char *key, char *why, size_t whysize)
{
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(task, key);
	if (!cJSON_IsString(pr) || !*pr->valuestring) {
		snprintf(why, whysize, "no \"%s\" (a non-empty string)", key);
		return NULL;
	}
	if (strlen(pr->valuestring) > AGENT_MAX_PROBLEM) {
		snprintf(why, whysize, "\"%s\" is longer than %u bytes", key, AGENT_MAX_PROBLEM);
		return NULL;
	}
	return pr;
}

int batch_task_parse(const char *line, size_t len, const char *base_dir, struct batch_task *t,
		     char *why, size_t whysize)
{
	*t = (struct batch_task){0};
	/* A NUL in a string (\u0000) would cut it where C sees it end: "a\u0000b"
	 * would be the id "a". Refused, wherever it is. */
	for (const char *p = line; (p = memmem(p, len - (size_t)(p - line), "\\u0000", 6)); p++) {
		size_t bs = 0;
		while (p - bs > line && p[-(ptrdiff_t)bs - 1] == '\\')
			bs++;
		if (bs % 2 == 0) {
			snprintf(why, whysize, "a string holds a NUL character (\\u0000), which sandcell "
					       "cannot keep; take it out");
			return -1;
		}
	}
	cJSON *root = cJSON_ParseWithLength(line, len);
	int rc = -1;
	if (!root) {
		snprintf(why, whysize, "not valid JSON");
		return -1;
	}
	if (!cJSON_IsObject(root)) {
		snprintf(why, whysize, "not a JSON object");
		goto out;
	}
	const cJSON *pr;
	if (batch_task_id(root, "id", &t->id, why, whysize) < 0 ||
	    !(pr = batch_task_problem(root, "problem", why, whysize)))
		goto out;
	t->problem = strdup(pr->valuestring);
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input_dir");
	if (in && !cJSON_IsNull(in)) {
		struct stat st;
		if (cJSON_IsString(in) && (t->input_dir = resolve_path(base_dir, in->valuestring)) &&
		    lstat(t->input_dir, &st) == 0 && S_ISLNK(st.st_mode)) {
			snprintf(why, whysize, "\"input_dir\": %.200s is a symlink; name the directory "
					       "it points to", in->valuestring);
			goto out;
		}
		if (!cJSON_IsString(in) || !t->input_dir ||
		    stat(t->input_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(why, whysize, "\"input_dir\": %.200s is not a directory",
				 cJSON_IsString(in) ? in->valuestring : "(not a string)");
			goto out;
		}
	}
	const cJSON *img = cJSON_GetObjectItemCaseSensitive(root, "image");
	if (img && !cJSON_IsNull(img)) {
		if (!cJSON_IsString(img) || !batch_image_name_valid(img->valuestring)) {
			snprintf(why, whysize, "\"image\": expected a store name or a registry reference "
					       "([HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST]), at most %d bytes",
				 BATCH_MAX_IMAGE);
			goto out;
		}
		t->image = strdup(img->valuestring);
	}
	const cJSON *ans = cJSON_GetObjectItemCaseSensitive(root, "answer");
	if (ans && !cJSON_IsNull(ans)) {
		t->expected = answer_text(ans);
		if (!t->expected) {
			snprintf(why, whysize, "\"answer\": expected a string, a number or a list");
			goto out;
		}
	}
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "scorer");
	if (sc && !cJSON_IsNull(sc) && parse_scorer(sc, base_dir, t, why, whysize) < 0)
		goto out;
	const cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "setup");
	if (su && !cJSON_IsNull(su) && parse_setup(su, t, why, whysize) < 0)
		goto out;
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	if (md)
		t->metadata = cJSON_Duplicate(md, true);
	t->extra = cJSON_CreateObject();
	for (const cJSON *f = root->child; f; f = f->next) {
		if (!f->string || is_known(f->string))
			continue;
		if (is_reserved(f->string)) {
			snprintf(why, whysize, "field \"%s\" is reserved for results; rename it or put "
					       "it in \"metadata\"", f->string);
			goto out;
		}
		if (cJSON_GetObjectItemCaseSensitive(t->extra, f->string)) {
			snprintf(why, whysize, "field \"%.100s\" appears twice", f->string);
			goto out;
		}
		cJSON_AddItemToObject(t->extra, f->string, cJSON_Duplicate(f, true));
	}
	if (!t->problem || !t->extra) {
		snprintf(why, whysize, "out of memory");
		goto out;
	}
	t->hash = batch_hash(t->id);
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc < 0)
		batch_task_free(t);
	return rc;
}

void batch_task_free(struct batch_task *t)
{
	free(t->id);
	free(t->problem);
	free(t->input_dir);
	free(t->image);
	free(t->expected);
	free(t->scorer_command);
	free(t->scorer_files);
	cJSON_Delete(t->metadata);
	cJSON_Delete(t->extra);
	cJSON_Delete(t->record);
	cJSON_Delete(t->input_files);
	batch_swe_free(t->swe);
	batch_setup_free(t->setup);
	*t = (struct batch_task){0};
}

void batch_tasks_free(struct batch_tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		batch_task_free(&ts->v[i]);
	free(ts->v);
	*ts = (struct batch_tasks){0};
}

/* ---- the file ---- */

int batch_tasks_push(struct batch_tasks *ts, size_t *cap, struct batch_task *t)
{
	if (ts->n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct batch_task *v = realloc(ts->v, c * sizeof(*v));
		if (!v)
			return -1;
		ts->v = v;
		*cap = c;
	}
	ts->v[ts->n++] = *t;
	return 0;
}

typedef int (*line_parse_fn)(const char *line, size_t len, const char *base_dir, const void *ctx,
			     struct batch_task *t, char *why, size_t whysize);

static int load_lines(const char *path, line_parse_fn parse, const void *ctx,
		      struct batch_tasks *out, batch_bad_line_fn report, void *arg,
		      struct sc_err *err)
{
	*out = (struct batch_tasks){0};
	FILE *f = fopen(path, "re");
	if (!f)
		return sc_fail(err, errno, "cannot open the task file %s", path);
	char base[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(base, sizeof(base), ".");
	else if (slash == path)
		snprintf(base, sizeof(base), "/");
	else
		snprintf(base, sizeof(base), "%.*s", (int)(slash - path), path);
	struct batch_keyset ids = {0};
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t n;
	unsigned lineno = 0;
	int rc = 0;
	while ((n = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		char why[400];
		size_t len = (size_t)n;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		size_t k = 0;
		while (k < len && (line[k] == ' ' || line[k] == '\t'))
			k++;
		if (k == len)
			continue; /* blank */
		if (len > BATCH_MAX_LINE) {
			report(arg, lineno, "line longer than 8 MiB");
			out->bad++;
			continue;
		}
		struct batch_task t;
		if (parse(line, len, base, ctx, &t, why, sizeof(why)) < 0) {
			report(arg, lineno, why);
			out->bad++;
			continue;
		}
		t.line = lineno;
		if (batch_keyset_has(&ids, t.id, 0)) {
			snprintf(why, sizeof(why), "duplicate id \"%.100s\" (the first one counts)", t.id);
			report(arg, lineno, why);
			out->bad++;
			batch_task_free(&t);
			continue;
		}
		if (batch_keyset_add(&ids, t.id, 0) < 0 || batch_tasks_push(out, &cap, &t) < 0) {
			batch_task_free(&t);
			rc = sc_fail(err, ENOMEM, "tasks");
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = sc_fail(err, errno, "cannot read the task file %s", path);
	free(line);
	fclose(f);
	batch_keyset_free(&ids);
	if (rc < 0)
		batch_tasks_free(out);
	return rc;
}

static int parse_task(const char *line, size_t len, const char *base_dir, const void *ctx,
		      struct batch_task *t, char *why, size_t whysize)
{
	(void)ctx;
	return batch_task_parse(line, len, base_dir, t, why, whysize);
}

static int parse_swe(const char *line, size_t len, const char *base_dir, const void *ctx,
		     struct batch_task *t, char *why, size_t whysize)
{
	(void)base_dir;
	return batch_swe_task_parse(line, len, ctx, t, why, whysize);
}

int batch_tasks_load(const char *path, struct batch_tasks *out, batch_bad_line_fn report,
		     void *arg, struct sc_err *err)
{
	return load_lines(path, parse_task, NULL, out, report, arg, err);
}

int batch_swe_load(const char *path, const char *image_template, struct batch_tasks *out,
		   batch_bad_line_fn report, void *arg, struct sc_err *err)
{
	return load_lines(path, parse_swe, image_template, out, report, arg, err);
}
