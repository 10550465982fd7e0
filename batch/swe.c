/* SWE-bench-shaped tasks (batch --swe): a row of SWE-bench's format as a
 * task, the model's patch taken from the episode's cell, and the verdict
 * of the task's tests run in a fresh cell of its image, as SWE-bench's
 * harness gives it (docs/batch.md, "SWE-bench-shaped tasks"). */
#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch_priv.h"

#define SWE_MAX_TESTS 100000     /* names in FAIL_TO_PASS or PASS_TO_PASS */
#define SWE_MAX_TEST_NAME 4096   /* bytes in one test's name */
#define SWE_PATCH_LIMIT (16U << 20) /* bytes of the model's patch */
#define SWE_EVAL_OUTPUT (16U << 20) /* bytes of the tests' output kept */
#define SWE_LISTED 100           /* names of one kind written into a result */
#define SWE_DIR "/tmp/.sandcell-swe"

void batch_swe_free(struct batch_swe *s)
{
	if (!s)
		return;
	free(s->test_patch);
	free(s->eval_script);
	free(s->base_commit);
	for (size_t i = 0; i < s->n_f2p; i++)
		free(s->f2p[i]);
	for (size_t i = 0; i < s->n_p2p; i++)
		free(s->p2p[i]);
	free(s->f2p);
	free(s->p2p);
	free(s);
}

/* A list of test names: a JSON array of strings, or a string holding one
 * (as SWE-bench's published rows carry them). */
static int test_list(const cJSON *row, const char *key, char ***out, size_t *n, char *why,
		     size_t whysize)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
	cJSON *parsed = NULL;
	*out = NULL;
	*n = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsString(v))
		v = parsed = cJSON_Parse(v->valuestring);
	int rc = -1;
	int count = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
	if (count < 0 || count > SWE_MAX_TESTS) {
		snprintf(why, whysize, "\"%s\": expected a list of test names (at most %d)", key,
			 SWE_MAX_TESTS);
		goto out;
	}
	if (!(*out = calloc((size_t)count + 1, sizeof(char *))))
		goto oom;
	for (const cJSON *e = v->child; e; e = e->next) {
		if (!cJSON_IsString(e) || !*e->valuestring ||
		    strlen(e->valuestring) > SWE_MAX_TEST_NAME || strchr(e->valuestring, '\n')) {
			snprintf(why, whysize, "\"%s\": each test name is a non-empty line of at most %d "
					       "bytes", key, SWE_MAX_TEST_NAME);
			goto out;
		}
		if (!((*out)[(*n)++] = strdup(e->valuestring)))
			goto oom;
	}
	rc = 0;
	goto out;
oom:
	snprintf(why, whysize, "out of memory");
out:
	cJSON_Delete(parsed);
	return rc;
}

static int optional_text(const cJSON *row, const char *key, size_t max, char **out, char *why,
			 size_t whysize)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > max) {
		snprintf(why, whysize, "\"%s\": expected a string of at most %zu bytes", key, max);
		return -1;
	}
	*out = strdup(v->valuestring);
	return *out ? 0 : -1;
}

int batch_swe_image_name(const char *tmpl, const char *id, char *out, size_t size)
{
	size_t k = 0;
	for (const char *p = tmpl; *p;) {
		char piece[BATCH_MAX_IMAGE + 1];
		size_t n = 0;
		if (!strncmp(p, "{instance_id}", 13)) {
			n = (size_t)snprintf(piece, sizeof(piece), "%s", id);
			p += 13;
		} else if (!strncmp(p, "{swebench_id}", 13)) {
			/* SWE-bench's image names: lower case, "__" as "_1776_" */
			for (const char *q = id; *q && n + 6 < sizeof(piece); q++) {
				if (q[0] == '_' && q[1] == '_') {
					memcpy(piece + n, "_1776_", 6);
					n += 6;
					q++;
				} else {
					piece[n++] = (char)tolower((unsigned char)*q);
				}
			}
			p += 13;
		} else {
			piece[n++] = *p++;
		}
		if (n >= sizeof(piece) || k + n >= size)
			return -1;
		memcpy(out + k, piece, n);
		k += n;
	}
	out[k] = '\0';
	return batch_image_name_valid(out) ? 0 : -1;
}

static int swe_image(const cJSON *row, const char *tmpl, struct batch_task *t, char *why,
		     size_t whysize)
{
	const cJSON *img = cJSON_GetObjectItemCaseSensitive(row, "image");
	char name[BATCH_MAX_IMAGE + 1];
	if (cJSON_IsString(img) && batch_image_name_valid(img->valuestring)) {
		t->image = strdup(img->valuestring);
	} else if (img && !cJSON_IsNull(img)) {
		snprintf(why, whysize, "\"image\": expected a store name or a registry reference");
		return -1;
	} else if (tmpl) {
		if (batch_swe_image_name(tmpl, t->id, name, sizeof(name)) < 0) {
			snprintf(why, whysize, "--swe-image %.100s gives no valid image name for this "
					       "instance", tmpl);
			return -1;
		}
		t->image = strdup(name);
	}
	return 0;
}

/* The fields SWE-bench rows carry that results keep (the rest, such as
 * the gold patch, stay out of results.jsonl). */
static void keep_metadata(const cJSON *row, struct batch_task *t)
{
	static const char *const KEEP[] = {"repo", "base_commit", "version", "created_at"};
	t->metadata = cJSON_CreateObject();
	for (size_t i = 0; t->metadata && i < sizeof(KEEP) / sizeof(KEEP[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, KEEP[i]);
		if (cJSON_IsString(v) && strlen(v->valuestring) < 1024)
			cJSON_AddStringToObject(t->metadata, KEEP[i], v->valuestring);
	}
}

static int swe_fields(const cJSON *row, struct batch_swe *s, char *why, size_t whysize)
{
	const cJSON *tp = cJSON_GetObjectItemCaseSensitive(row, "test_patch");
	if (!cJSON_IsString(tp) || strlen(tp->valuestring) > BATCH_MAX_LINE) {
		snprintf(why, whysize, "no \"test_patch\" (a string: the diff that adds the tests)");
		return -1;
	}
	if (!(s->test_patch = strdup(tp->valuestring)) ||
	    test_list(row, "FAIL_TO_PASS", &s->f2p, &s->n_f2p, why, whysize) < 0 ||
	    test_list(row, "PASS_TO_PASS", &s->p2p, &s->n_p2p, why, whysize) < 0 ||
	    optional_text(row, "eval_script", 1U << 20, &s->eval_script, why, whysize) < 0 ||
	    optional_text(row, "base_commit", 64, &s->base_commit, why, whysize) < 0)
		return -1;
	if (s->base_commit && strspn(s->base_commit, "0123456789abcdef") != strlen(s->base_commit)) {
		snprintf(why, whysize, "\"base_commit\": expected a hexadecimal commit id");
		return -1;
	}
	if (!s->eval_script) /* the default runs pytest on the tests' files */
		for (size_t i = 0; i < s->n_f2p + s->n_p2p; i++) {
			const char *n = i < s->n_f2p ? s->f2p[i] : s->p2p[i - s->n_f2p];
			if (!strstr(n, "::") || n[0] == '-') {
				snprintf(why, whysize, "test \"%.100s\" is not a pytest node id "
						       "(FILE::NAME): give an \"eval_script\"", n);
				return -1;
			}
		}
	return 0;
}

int batch_swe_task_parse(const char *line, size_t len, const char *image_template,
			 struct batch_task *t, char *why, size_t whysize)
{
	*t = (struct batch_task){0};
	cJSON *row = cJSON_ParseWithLength(line, len);
	int rc = -1;
	const cJSON *pr;
	if (!cJSON_IsObject(row)) {
		snprintf(why, whysize, "not a JSON object");
		goto out;
	}
	if (batch_task_id(row, "instance_id", &t->id, why, whysize) < 0 ||
	    !(pr = batch_task_problem(row, "problem_statement", why, whysize)))
		goto out;
	if (!(t->problem = strdup(pr->valuestring)) || !(t->swe = calloc(1, sizeof(*t->swe)))) {
		snprintf(why, whysize, "out of memory");
		goto out;
	}
	if (swe_image(row, image_template, t, why, whysize) < 0 ||
	    swe_fields(row, t->swe, why, whysize) < 0)
		goto out;
	keep_metadata(row, t);
	t->extra = cJSON_CreateObject();
	t->has_scorer = true;
	t->scorer.kind = BATCH_SCORER_SWE;
	t->hash = batch_hash(t->id);
	rc = t->extra && t->metadata ? 0 : -1;
	if (rc < 0)
		snprintf(why, whysize, "out of memory");
out:
	cJSON_Delete(row);
	if (rc < 0)
		batch_task_free(t);
	return rc;
}

/* ---- the verdict: pytest's -rA summary ---- */

static const char *const PASSING[] = {"PASSED", "XFAIL"};
static const char *const FAILING[] = {"FAILED", "ERROR", "XPASS", "SKIPPED"};

/* A pytest node id closes its brackets ("t[1 - 2]"): a name that does not
 * is not one, and " - " after it is part of another test's name. */
static bool brackets_closed(const char *test)
{
	int depth = 0;
	for (const char *p = test; *p; p++)
		depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
	return depth == 0;
}

/* The status word of a summary line naming test (as "WORD TEST" or
 * "WORD TEST - reason"): 1 passing, 0 failing, -1 the line is not about
 * it. */
static int line_status(const char *l, size_t n, const char *test, size_t tn, bool reason_ok)
{
	for (int pass = 1; pass >= 0; pass--) {
		const char *const *words = pass ? PASSING : FAILING;
		size_t count = pass ? 2 : 4;
		for (size_t i = 0; i < count; i++) {
			size_t w = strlen(words[i]);
			if (n < w + 1 + tn || memcmp(l, words[i], w) || l[w] != ' ' ||
			    memcmp(l + w + 1, test, tn))
				continue;
			const char *rest = l + w + 1 + tn;
			size_t left = n - w - 1 - tn;
			if (left == 0 || (reason_ok && left >= 3 && !memcmp(rest, " - ", 3)))
				return pass;
		}
	}
	return -1;
}

bool batch_swe_test_passed(const char *out, size_t len, const char *test)
{
	size_t tn = strlen(test);
	bool reason_ok = brackets_closed(test);
	int last = 0; /* a test the report does not name did not pass */
	for (const char *p = out, *end = out + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		size_t n = (size_t)((nl ? nl : end) - p);
		while (n && p[n - 1] == '\r')
			n--;
		int s = line_status(p, n, test, tn, reason_ok);
		if (s >= 0)
			last = s;
		p = next;
	}
	return last == 1;
}

/* {"success": [...], "failure": [...]} of one list, each cut at limit
 * names (0: all); *all_pass when every test passed. */
static cJSON *tests_report(char *const *tests, size_t n, const char *out, size_t len, size_t limit,
			   bool *all_pass, size_t *nfail)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *ok = cJSON_AddArrayToObject(o, "success");
	cJSON *bad = cJSON_AddArrayToObject(o, "failure");
	size_t nok = 0;
	*nfail = 0;
	for (size_t i = 0; i < n; i++) {
		bool pass = batch_swe_test_passed(out, len, tests[i]);
		size_t *count = pass ? &nok : nfail;
		if (!limit || *count < limit)
			cJSON_AddItemToArray(pass ? ok : bad, cJSON_CreateString(tests[i]));
		(*count)++;
	}
	if (limit && (nok > limit || *nfail > limit))
		cJSON_AddTrueToObject(o, "truncated");
	cJSON_AddNumberToObject(o, "passed", (double)nok);
	cJSON_AddNumberToObject(o, "failed", (double)*nfail);
	*all_pass = *all_pass && *nfail == 0;
	return o;
}

cJSON *batch_swe_verdict(const struct batch_swe *s, int exit_code, const char *out, size_t len,
			 size_t limit, bool *resolved)
{
	cJSON *v = cJSON_CreateObject();
	bool all = true;
	size_t f1, f2;
	cJSON_AddItemToObject(v, "FAIL_TO_PASS", tests_report(s->f2p, s->n_f2p, out, len, limit, &all, &f1));
	cJSON_AddItemToObject(v, "PASS_TO_PASS", tests_report(s->p2p, s->n_p2p, out, len, limit, &all, &f2));
	/* no tests named: the eval script's exit status decides */
	*resolved = s->n_f2p + s->n_p2p ? all : exit_code == 0;
	cJSON_AddBoolToObject(v, "resolved", *resolved);
	return v;
}

/* ---- in the cells ---- */

static int write_all(const char *path, const char *data, size_t len, struct sc_err *err)
{
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || sc_write_all(fd, data, len) < 0)
		return sc_fail(err, errno, "cannot write %s", path);
	return 0;
}

static int run_sh(struct cell *c, const char *script, double timeout, uint64_t limit,
		  struct cell_result *res, struct sc_err *err)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct cell_exec_req req = {.argv = argv, .cwd = "/", .timeout_s = timeout,
				    .output_limit = limit, .stdin_fd = -1, .stdout_fd = -1,
				    .stderr_fd = -1};
	return cell_exec(c, &req, res, err);
}

int batch_swe_capture_patch(struct cell *c, const struct batch_task *t, const char *dir,
			    struct sc_err *err)
{
	char script[256], path[SC_PATH_BUF];
	snprintf(script, sizeof(script),
		 "cd /testbed && git -c safe.directory='*' add -A >/dev/null && git -c safe.directory='*' diff --cached --binary %s",
		 t->swe->base_commit ? t->swe->base_commit : "HEAD");
	struct cell_result res;
	if (sc_path(path, sizeof(path), "%s/patch.diff", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s/patch.diff", dir);
	if (run_sh(c, script, 120, SWE_PATCH_LIMIT, &res, err) < 0)
		return sc_err_wrap(err, "taking the model's patch (git diff in /testbed)");
	int rc = 0;
	if (res.exit_code != 0)
		rc = sc_fail(err, 0, "git diff in /testbed failed (exit %d): %.200s", res.exit_code,
			     res.err ? res.err : "");
	else if (res.out_truncated)
		rc = sc_fail(err, EFBIG, "the model's patch is over %u MiB", SWE_PATCH_LIMIT >> 20);
	else
		rc = write_all(path, res.out ? res.out : "", res.out_len, err);
	cell_result_free(&res);
	return rc;
}

/* The evaluation, run by /bin/sh in the fresh cell: the model's patch,
 * the test files put back as the base commit has them, the test patch,
 * then eval.sh or pytest on the tests' files. */
static const char EVAL_SCRIPT[] =
	"d=" SWE_DIR "; cd /testbed || { echo 'sandcell-swe: no /testbed in the image' >&2; exit 3; }\n"
	"g() { git -c safe.directory='*' \"$@\"; }\n"
	"if [ -s $d/model.patch ] && ! g apply --binary $d/model.patch; then\n"
	"  echo 'sandcell-swe: the model patch does not apply' >&2; exit 4; fi\n"
	"sed -n 's|^+++ b/||p' $d/test.patch | while IFS= read -r f; do\n"
	"  g checkout -q \"$BASE\" -- \"$f\" 2>/dev/null || rm -f -- \"$f\"; done\n"
	"if [ -s $d/test.patch ] && ! g apply --binary $d/test.patch; then\n"
	"  echo 'sandcell-swe: the test patch does not apply' >&2; exit 5; fi\n"
	"if [ -f $d/eval.sh ]; then exec /bin/bash $d/eval.sh; fi\n"
	"tr '\\n' '\\0' < $d/tests.txt | xargs -0 python3 -m pytest -rA -p no:cacheprovider\n";

/* The tests' files, one per line (pytest node ids up to "::"). */
static char *test_files(const struct batch_swe *s)
{
	struct sc_strset seen = {0};
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	if (!f)
		return NULL;
	for (size_t i = 0; i < s->n_f2p + s->n_p2p; i++) {
		const char *n = i < s->n_f2p ? s->f2p[i] : s->p2p[i - s->n_f2p];
		const char *sep = strstr(n, "::");
		_cleanup_free_ char *file = strndup(n, sep ? (size_t)(sep - n) : strlen(n));
		if (file && !sc_strset_has(&seen, file) && sc_strset_add(&seen, file) == 0)
			fprintf(f, "%s\n", file);
	}
	sc_strset_free(&seen);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int stage_eval(const struct batch_task *t, const char *dir, const char *stage,
		      struct sc_err *err)
{
	char p[SC_PATH_BUF], from[SC_PATH_BUF];
	_cleanup_free_ char *files = test_files(t->swe);
	if (!files)
		return sc_fail(err, ENOMEM, "test files");
	if (mkdir(stage, 0755) < 0)
		return sc_fail(err, errno, "cannot make %s", stage);
	if (sc_path(p, sizeof(p), "%s/test.patch", stage) < 0 ||
	    write_all(p, t->swe->test_patch, strlen(t->swe->test_patch), err) < 0 ||
	    sc_path(p, sizeof(p), "%s/tests.txt", stage) < 0 ||
	    write_all(p, files, strlen(files), err) < 0)
		return -1;
	if (t->swe->eval_script &&
	    (sc_path(p, sizeof(p), "%s/eval.sh", stage) < 0 ||
	     write_all(p, t->swe->eval_script, strlen(t->swe->eval_script), err) < 0))
		return -1;
	/* the patch as the episode left it (none: the model changed nothing) */
	if (sc_path(from, sizeof(from), "%s/patch.diff", dir) < 0 ||
	    sc_path(p, sizeof(p), "%s/model.patch", stage) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s", dir);
	if (link(from, p) < 0 && errno != ENOENT)
		return sc_fail(err, errno, "cannot stage %s", from);
	return 0;
}

static int record_eval(const struct batch_task *t, const char *dir, const struct cell_result *res,
		       cJSON **tests, bool *resolved, struct sc_err *err)
{
	char p[SC_PATH_BUF];
	_cleanup_free_ char *log = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&log, &n);
	if (!f)
		return sc_fail(err, ENOMEM, "eval log");
	fprintf(f, "exit %d%s\n", res->exit_code, res->timed_out ? " (timed out)" : "");
	fwrite(res->out ? res->out : "", 1, res->out_len, f);
	fwrite(res->err ? res->err : "", 1, res->err_len, f);
	fclose(f);
	if (sc_path(p, sizeof(p), "%s/eval.log", dir) < 0 || write_all(p, log, n, err) < 0)
		return -1;
	const char *out = res->out ? res->out : "";
	cJSON *full = batch_swe_verdict(t->swe, res->exit_code, out, res->out_len, 0, resolved);
	_cleanup_free_ char *text = full ? cJSON_Print(full) : NULL;
	cJSON_Delete(full);
	if (!text || sc_path(p, sizeof(p), "%s/report.json", dir) < 0 ||
	    write_all(p, text, strlen(text), err) < 0)
		return text ? -1 : sc_fail(err, ENOMEM, "report");
	*tests = batch_swe_verdict(t->swe, res->exit_code, out, res->out_len, SWE_LISTED, resolved);
	return *tests ? 0 : sc_fail(err, ENOMEM, "report");
}

int batch_swe_evaluate(struct cell *c, const struct batch_task *t, double timeout_s,
		       const char *dir, cJSON **tests, bool *resolved, bool *timed_out,
		       struct sc_err *err)
{
	char stage[SC_PATH_BUF], env_base[80];
	*tests = NULL;
	*resolved = *timed_out = false;
	if (sc_path(stage, sizeof(stage), "%s/.swe", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s/.swe", dir);
	sc_remove_tree(stage);
	int rc = -1;
	if (stage_eval(t, dir, stage, err) < 0 ||
	    cell_copy_in(c, stage, SWE_DIR, CELL_DEFAULT_DISK, err) < 0)
		goto out;
	snprintf(env_base, sizeof(env_base), "BASE=%s",
		 t->swe->base_commit ? t->swe->base_commit : "HEAD");
	const char *env[] = {env_base, NULL};
	char *argv[] = {"/bin/sh", "-c", (char *)EVAL_SCRIPT, NULL};
	struct cell_exec_req req = {.argv = argv, .env = env, .cwd = "/", .timeout_s = timeout_s,
				    .output_limit = SWE_EVAL_OUTPUT, .stdin_fd = -1,
				    .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result res;
	if (cell_exec(c, &req, &res, err) < 0)
		goto out;
	*timed_out = res.timed_out;
	rc = record_eval(t, dir, &res, tests, resolved, err);
	cell_result_free(&res);
out:
	sc_remove_tree(stage);
	return rc;
}
