/* The Python support modules compiled once per host (a cache keyed by
 * the interpreter's tag) and seeded into cells as .pyc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The image's python3 compiles the support module in place, as an
 * unchecked-hash pyc (valid whatever the source file's time: each cell
 * writes its own copy), and says its cache tag. -I -S: no site, no
 * environment, so nothing else of the image's runs. */
static const char PY_COMPILE[] =
	"import py_compile, sys\n"
	"py_compile.compile(sys.argv[1], doraise=True,\n"
	"    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
	"sys.stdout.write(sys.implementation.cache_tag)\n";
#define PY_PYC_MAX (256u << 10)

static bool cache_tag_ok(const char *t, size_t n)
{
	if (n == 0 || n >= sizeof(((struct lang_prep_cache *)0)->tag))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '-' ||
		      t[i] == '_'))
			return false;
	return true;
}

static void pyc_path(const struct lang_prep_cache *pc, char *out, size_t size)
{
	snprintf(out, size, "%s/__pycache__/sitecustomize.%s.pyc", LANG_PY_DIR, pc->tag);
}

/* The first cell: compile, read the bytecode back (bounded). Any failure
 * (no python3 in the image, ...) leaves the cache empty: runs compile. */
static void compile_support(struct cell *c, struct lang_prep_cache *pc)
{
	pc->tried = true;
	char *argv[] = {"python3", "-I", "-S", "-c", (char *)PY_COMPILE,
			LANG_PY_DIR "/sitecustomize.py", NULL};
	struct cell_exec_req er = {.argv = argv, .timeout_s = 30, .output_limit = 4096,
				   .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result cr;
	struct sc_err e = {0};
	if (cell_exec(c, &er, &cr, &e) < 0)
		return;
	bool ok = cr.exit_code == 0 && cr.out && cache_tag_ok(cr.out, cr.out_len);
	if (ok) {
		memcpy(pc->tag, cr.out, cr.out_len);
		pc->tag[cr.out_len] = '\0';
	}
	cell_result_free(&cr);
	char path[LANG_MAX_PATH];
	struct cell_file cf;
	if (!ok)
		return;
	pyc_path(pc, path, sizeof(path));
	if (cell_read_file(c, path, PY_PYC_MAX, 30, &cf, &e) < 0)
		return;
	if (cf.truncated || cf.len == 0) {
		free(cf.data);
		return;
	}
	pc->pyc = cf.data;
	pc->pyc_len = cf.len;
}

/* The interpreter a run may take (lang/py/sc_zygote.py), started with
 * the environment of a Python run (LANG_PY_ENV_SUPPORT; not the plot
 * directory, which is each run's own); it puts itself in the background
 * once it listens. A cell where it does not start (no python3 in the
 * image) runs its code the usual way. */
static void start_interpreter(struct cell *c, const struct lang_prep_cache *pc)
{
	char *argv[4 + LANG_MAX_PREIMPORT + 1] = {"python3", "-u", LANG_PY_DIR "/sc_zygote.py",
						   CELL_ZYGOTE_SOCKET};
	size_t n = 4;
	for (size_t i = 0; pc->preimport && pc->preimport[i] && n < SC_ARRAY_LEN(argv) - 1; i++)
		argv[n++] = (char *)pc->preimport[i];
	argv[n] = NULL;
	const char *env[] = {LANG_PY_ENV_SUPPORT, NULL};
	struct cell_exec_req er = {.argv = argv, .env = env, .timeout_s = 120, .output_limit = 4096,
				   .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result cr;
	struct sc_err e = {0};
	if (lang_i_put_file(c, LANG_PY_DIR "/sc_zygote.py", lang_py_sc_zygote,
			    lang_py_sc_zygote_size, &e) < 0 ||
	    cell_exec(c, &er, &cr, &e) < 0)
		return;
	cell_result_free(&cr);
}

int lang_prepare_cell(struct cell *c, void *ctx, struct sc_err *err)
{
	struct lang_prep_cache *pc = ctx;
	if ((!pc || !pc->seeded) && lang_i_install_py(c, err) < 0)
		return -1;
	if (!pc)
		return 0;
	if (!pc->tried) {
		compile_support(c, pc);
	} else if (pc->pyc) {
		char path[LANG_MAX_PATH];
		pyc_path(pc, path, sizeof(path));
		if (cell_write_file(c, path, pc->pyc, pc->pyc_len, CELL_FILE_CREATE, 30, err) < 0)
			return sc_err_wrap(err, "writing %s in the cell", path);
	}
	if (pc->prestart)
		start_interpreter(c, pc);
	return 0;
}

void lang_prep_cache_free(struct lang_prep_cache *pc)
{
	free(pc->pyc);
	*pc = (struct lang_prep_cache){0};
}
