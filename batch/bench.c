/* Benchmark folders of the reference harness (LLM-in-Sandbox): DIR/config.yaml
 * names the data, each problem becomes a task, its input_files are staged
 * on the host for the agent to copy in, and reward.py / vanilla_llm_prompt.py
 * run in a cell through the helper script below (the cell part is in
 * run.c). See docs/lis.md. */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "../agent/promptcfg.h"
#include "batch_priv.h"

#define BENCH_MAX_DATA (1ULL << 30)   /* bytes of a data file */
#define BENCH_MAX_FILE_NAME 1024

/* The helper run in the cell: argv[1] is "reward", "check" (reward.py
 * imports and has compute_score) or "prompt", argv[2] the
 * benchmark folder in the cell; the request is JSON on stdin. Whatever the
 * benchmark's module prints goes to stderr; the verdict is the last line
 * of stdout, "SANDCELL-RESULT " and a JSON object. */
const char BATCH_BENCH_HELPER[] =
	"import importlib.util, json, math, os, sys\n"
	"mode, bench = sys.argv[1], sys.argv[2]\n"
	"req = json.load(sys.stdin)\n"
	"out = os.fdopen(os.dup(1), 'w')\n"
	"os.dup2(2, 1)\n"
	"sys.path[:0] = [bench, os.path.dirname(bench)]\n"
	"def say(**kw):\n"
	"    sys.stdout.flush()\n"
	"    sys.stderr.flush()\n"
	"    out.write('\\nSANDCELL-RESULT ' + json.dumps(kw) + '\\n')\n"
	"    out.flush()\n"
	"    os._exit(0)\n"
	"def why(e):\n"
	"    return ('%s: %s' % (type(e).__name__, e))[:2000]\n"
	"name = 'vanilla_llm_prompt' if mode == 'prompt' else 'reward'\n"
	"try:\n"
	"    spec = importlib.util.spec_from_file_location(name, os.path.join(bench, name + '.py'))\n"
	"    mod = importlib.util.module_from_spec(spec)\n"
	"    spec.loader.exec_module(mod)\n"
	"except BaseException as e:\n"
	"    say(load_error=why(e))\n"
	"if mode == 'check':\n"
	"    say(ok=callable(getattr(mod, 'compute_score', None)))\n"
	"try:\n"
	"    if mode == 'reward':\n"
	"        v = float(mod.compute_score(req['answer'], req['ground_truth'], **req['fields']))\n"
	"        if not math.isfinite(v):\n"
	"            raise ValueError('compute_score returned %r' % v)\n"
	"        say(score=v)\n"
	"    fn = getattr(mod, 'create_prompt', None)\n"
	"    if fn is None:\n"
	"        say(prompt=req['problem']['problem_statement'])\n"
	"    p = fn(req['problem'])\n"
	"    if not isinstance(p, str):\n"
	"        raise TypeError('create_prompt returned %s, not a string' % type(p).__name__)\n"
	"    say(prompt=p)\n"
	"except BaseException as e:\n"
	"    say(error=why(e))\n";

cJSON *batch_bench_parse_result(const char *out, size_t len)
{
	static const char tag[] = "SANDCELL-RESULT ";
	const char *hit = NULL;
	for (const char *p = out; p && p < out + len;) {
		const char *q = memmem(p, (size_t)(out + len - p), tag, sizeof(tag) - 1);
		if (!q)
			break;
		if (q == out || q[-1] == '\n')
			hit = q;
		p = q + 1;
	}
	if (!hit)
		return NULL;
	const char *b = hit + sizeof(tag) - 1, *e = memchr(b, '\n', (size_t)(out + len - b));
	if (!e)
		e = out + len;
	cJSON *j = cJSON_ParseWithLength(b, (size_t)(e - b));
	if (j && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* ---- where the data is ---- */

int batch_benchmark_data_path(const char *dir, const char *data, char **out, struct sc_err *err)
{
	*out = NULL;
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return sc_fail(err, errno ? errno : ENOTDIR, "--benchmark %s: not a directory", dir);
	if (data) {
		char real[PATH_MAX]; /* recorded in batch.json: absolute when it resolves */
		if (!(*out = strdup(realpath(data, real) ? real : data)))
			return sc_fail(err, ENOMEM, "data path");
		return 0;
	}
	char cfg[PATH_MAX + 16];
	if (sc_path(cfg, sizeof(cfg), "%s/config.yaml", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s", dir);
	struct agent_prompt_config pc;
	if (agent_prompt_config_load(cfg, &pc, err) < 0)
		return -1;
	int rc = -1;
	if (!pc.dataset) {
		sc_fail(err, 0, "%s names no dataset; pass --data FILE (a JSON array or JSONL of "
				"problems)", cfg);
	} else if (strcmp(pc.dataset, "json")) {
		sc_fail(err, 0, "%s names the hub dataset '%.200s': sandcell does not download "
				"datasets; save it as JSON first (e.g. with the datasets library: "
				"load_dataset(...).to_json(FILE)) and pass --data FILE", cfg, pc.dataset);
	} else if (!pc.data_files || !*pc.data_files) {
		sc_fail(err, 0, "%s: dataset \"json\" without data_files; pass --data FILE", cfg);
	} else if (pc.data_files[0] == '/') {
		rc = (*out = strdup(pc.data_files)) ? 0 : sc_fail(err, ENOMEM, "data path");
	} else {
		/* relative to the folder that holds the benchmark folders, as the
		 * reference resolves it */
		char real[PATH_MAX];
		if (!realpath(dir, real)) {
			sc_fail(err, errno, "%s", dir);
		} else {
			char *slash = strrchr(real, '/');
			if (slash == real)
				slash[1] = '\0';
			else if (slash)
				*slash = '\0';
			if (asprintf(out, "%s/%s", real, pc.data_files) < 0)
				*out = NULL;
			rc = *out ? 0 : sc_fail(err, ENOMEM, "data path");
		}
	}
	agent_prompt_config_free(&pc);
	return rc;
}

/* ---- problems ---- */

static bool good_file_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > BENCH_MAX_FILE_NAME || name[0] == '/' || name[n - 1] == '/')
		return false;
	for (const char *p = name;;) {
		const char *e = strchr(p, '/');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k == 0 || k > 255 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!e)
			break;
		p = e + 1;
	}
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	return true;
}

/* input_files: an object of name -> text (null: skipped), or a JSON string of one. */
static int parse_input_files(const cJSON *v, cJSON **out, char *why, size_t whysize)
{
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	cJSON *obj = NULL;
	if (cJSON_IsString(v)) {
		if (!*v->valuestring)
			return 0;
		obj = cJSON_Parse(v->valuestring);
		if (!cJSON_IsObject(obj)) {
			cJSON_Delete(obj);
			snprintf(why, whysize, "\"input_files\": a string that is not a JSON object");
			return -1;
		}
	} else if (cJSON_IsObject(v)) {
		obj = cJSON_Duplicate(v, true);
	} else {
		snprintf(why, whysize, "\"input_files\": expected an object of name -> text");
		return -1;
	}
	for (const cJSON *f = obj ? obj->child : NULL; f; f = f->next) {
		if (!f->string || !good_file_name(f->string)) {
			snprintf(why, whysize, "\"input_files\": bad file name '%.100s' (a relative "
					       "path without . or ..)", f->string ? f->string : "");
			cJSON_Delete(obj);
			return -1;
		}
		if (!cJSON_IsString(f) && !cJSON_IsNull(f)) {
			snprintf(why, whysize, "\"input_files\".\"%.100s\": expected text", f->string);
			cJSON_Delete(obj);
			return -1;
		}
	}
	*out = obj;
	return 0;
}

static char *value_text(const cJSON *v)
{
	if (cJSON_IsString(v))
		return strdup(v->valuestring);
	return cJSON_PrintUnformatted(v);
}

static int problem_task(const cJSON *p, struct batch_task *t, char *why, size_t whysize)
{
	*t = (struct batch_task){0};
	if (!cJSON_IsObject(p)) {
		snprintf(why, whysize, "not a JSON object");
		return -1;
	}
	const cJSON *ps;
	if (batch_task_id(p, "id", &t->id, why, whysize) < 0 ||
	    !(ps = batch_task_problem(p, "problem_statement", why, whysize)))
		goto bad;
	const cJSON *gt = cJSON_GetObjectItemCaseSensitive(p, "ground_truth");
	if (!gt) {
		snprintf(why, whysize, "no \"ground_truth\"");
		goto bad;
	}
	if (parse_input_files(cJSON_GetObjectItemCaseSensitive(p, "input_files"), &t->input_files,
			      why, whysize) < 0)
		goto bad;
	t->problem = strdup(ps->valuestring);
	t->expected = cJSON_IsNull(gt) ? NULL : value_text(gt);
	t->record = cJSON_Duplicate(p, true);
	if (!t->problem || (!t->expected && !cJSON_IsNull(gt)) || !t->record) {
		snprintf(why, whysize, "out of memory");
		goto bad;
	}
	t->has_scorer = true;
	t->scorer = (struct batch_scorer){.kind = BATCH_SCORER_REWARD,
					  .timeout_s = BATCH_DEFAULT_CHECKER_TIMEOUT};
	t->hash = batch_hash(t->id);
	return 0;
bad:
	batch_task_free(t);
	return -1;
}

/* One problem (number `at`: the line of a JSONL file, the element of an
 * array counted from 1). -1 only when out of memory. */
static int take(struct batch_tasks *out, size_t *cap, struct batch_keyset *ids, const cJSON *p,
		unsigned at, batch_bad_line_fn report, void *arg)
{
	char why[400];
	struct batch_task t;
	if (problem_task(p, &t, why, sizeof(why)) < 0) {
		report(arg, at, why);
		out->bad++;
		return 0;
	}
	t.line = at;
	if (batch_keyset_has(ids, t.id, 0)) {
		snprintf(why, sizeof(why), "duplicate id \"%.100s\" (the first one counts)", t.id);
		report(arg, at, why);
		out->bad++;
		batch_task_free(&t);
		return 0;
	}
	if (batch_keyset_add(ids, t.id, 0) < 0 || batch_tasks_push(out, cap, &t) < 0) {
		batch_task_free(&t);
		return -1;
	}
	return 0;
}

int batch_bench_load(const char *path, struct batch_tasks *out, batch_bad_line_fn report,
		     void *arg, struct sc_err *err)
{
	*out = (struct batch_tasks){0};
	char *text = NULL;
	size_t len = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_REGULAR, BENCH_MAX_DATA, &text, &len, err) < 0)
		return sc_err_wrap(err, "the benchmark's data %s", path);
	struct batch_keyset ids = {0};
	size_t cap = 0, k = 0;
	int rc = 0;
	while (k < len && strchr(" \t\r\n", text[k]))
		k++;
	if (k < len && text[k] == '[') {
		cJSON *all = cJSON_ParseWithLength(text, len);
		if (!cJSON_IsArray(all)) {
			rc = sc_fail(err, 0, "%s: starts with '[' but is not a JSON array", path);
		} else {
			unsigned at = 0;
			for (const cJSON *p = all->child; p && rc == 0; p = p->next)
				if (take(out, &cap, &ids, p, ++at, report, arg) < 0)
					rc = sc_fail(err, ENOMEM, "problems");
		}
		cJSON_Delete(all);
	} else {
		unsigned line = 0;
		for (char *p = text; p < text + len && rc == 0;) {
			char *e = memchr(p, '\n', (size_t)(text + len - p));
			size_t n = e ? (size_t)(e - p) : (size_t)(text + len - p);
			line++;
			size_t b = 0;
			while (b < n && strchr(" \t\r", p[b]))
				b++;
			if (b < n) {
				cJSON *j = cJSON_ParseWithLength(p, n);
				if (!j) {
					report(arg, line, "not valid JSON");
					out->bad++;
				} else if (take(out, &cap, &ids, j, line, report, arg) < 0) {
					rc = sc_fail(err, ENOMEM, "problems");
				}
				cJSON_Delete(j);
			}
			p += n + 1;
		}
	}
	free(text);
	batch_keyset_free(&ids);
	if (rc < 0)
		batch_tasks_free(out);
	return rc;
}

/* ---- input files on the host ---- */

static int write_beneath(int root, const char *name, const char *data, struct sc_err *err)
{
	_cleanup_fd_ int fd = sc_create_beneath(root, name);
	if (fd < 0 || sc_write_all(fd, data, strlen(data)) < 0)
		return sc_fail(err, errno, "input file %s", name);
	return 0;
}

int batch_bench_stage_inputs(const struct batch_task *t, const char *stage, struct sc_err *err)
{
	sc_remove_tree(stage);
	if (sc_mkdir_p(stage, 0755, err) < 0)
		return -1;
	_cleanup_fd_ int root = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return sc_fail(err, errno, "%s", stage);
	for (const cJSON *f = t->input_files ? t->input_files->child : NULL; f; f = f->next)
		if (cJSON_IsString(f) && write_beneath(root, f->string, f->valuestring, err) < 0)
			return -1;
	return 0;
}
