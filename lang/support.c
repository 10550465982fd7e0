/* What a cell that runs code is given (the Python and R support files:
 * the matplotlib backend, the plot directory, the plotly hook, R's
 * profile) and what is read back from it (its plots). Shared by one-shot
 * runs (lang.c) and sessions (session.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char PNG_MAGIC[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};

/* Write a file into the cell unless it is there with the same bytes. A
 * fresh cell has none of them: creating comes first (one round trip). */
int lang_i_put_file_as(struct cell *c, const char *path, const unsigned char *data, size_t len,
		       unsigned flags, struct sc_err *err)
{
	struct sc_err e = {0};
	if (cell_write_file(c, path, data, len, CELL_FILE_CREATE | flags, 30, &e) == 0)
		return 0;
	if (e.errnum != EEXIST) {
		sc_err_set(err, e.errnum, e.msg);
		return sc_err_wrap(err, "writing %s in the cell", path);
	}
	struct cell_file cf;
	if (cell_read_file(c, path, len + 1, 30, &cf, &e) == 0) {
		bool same = cf.len == len && !memcmp(cf.data, data, len);
		free(cf.data);
		if (same)
			return 0;
	}
	if (cell_write_file(c, path, data, len, 0, 30, err) < 0)
		return sc_err_wrap(err, "writing %s in the cell", path);
	return 0;
}

int lang_i_put_file(struct cell *c, const char *path, const unsigned char *data, size_t len,
		    struct sc_err *err)
{
	return lang_i_put_file_as(c, path, data, len, 0, err);
}

/* The support files every cell that runs code starts with: seeded by its
 * setup (lang_seed_files), or written into a cell made without them. */
static struct cell_seed_file support_file(size_t i)
{
	switch (i) {
	case 0:
		return (struct cell_seed_file){LANG_PY_DIR "/sc_plots.py", lang_py_sc_plots,
					       lang_py_sc_plots_size};
	case 1:
		return (struct cell_seed_file){LANG_PY_DIR "/sitecustomize.py", lang_py_sitecustomize,
					       lang_py_sitecustomize_size};
	case 2:
		return (struct cell_seed_file){LANG_PY_DIR "/sc_backend.py", lang_py_sc_backend,
					       lang_py_sc_backend_size};
	default:
		return (struct cell_seed_file){LANG_R_PROFILE, lang_r_profile, lang_r_profile_size};
	}
}

size_t lang_seed_files(struct cell_seed_file out[LANG_SEED_FILES])
{
	for (size_t i = 0; i < LANG_SEED_FILES; i++)
		out[i] = support_file(i);
	return LANG_SEED_FILES;
}

/* Write the support files of one language (Python's live under
 * LANG_PY_DIR, R's is its profile) into a cell made without them. */
static int install_support(struct cell *c, bool python, struct sc_err *err)
{
	for (size_t i = 0; i < LANG_SEED_FILES; i++) {
		struct cell_seed_file f = support_file(i);
		bool is_py = !strncmp(f.path, LANG_PY_DIR "/", strlen(LANG_PY_DIR) + 1);
		if (is_py == python && lang_i_put_file(c, f.path, f.data, f.len, err) < 0)
			return -1;
	}
	return 0;
}

int lang_i_install_py(struct cell *c, struct sc_err *err)
{
	return install_support(c, true, err);
}

int lang_i_install_r(struct cell *c, struct sc_err *err)
{
	return install_support(c, false, err);
}

/* Does an HTML plot look like one: '<' first (after blanks and a BOM)? */
static bool html_ok(const char *d, size_t n)
{
	size_t i = n >= 3 && !memcmp(d, "\xef\xbb\xbf", 3) ? 3 : 0;
	while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t'))
		i++;
	return i < n && d[i] == '<';
}

/* Plot number i of dir, as PNG or else HTML: 1 with cf filled and *fmt
 * set; 0 when it is there but over the size bound or not of its format
 * (cf to be freed); -ENOENT when neither file is there; -1 else. */
static int read_plot(struct cell *c, const char *dir, long i, struct cell_file *cf,
		     const char **fmt)
{
	static const char *const FMTS[] = {"png", "html"};
	bool missing = true;
	for (size_t k = 0; k < SC_ARRAY_LEN(FMTS); k++) {
		char path[LANG_MAX_PATH + 64];
		snprintf(path, sizeof(path), "%s/plot-%04ld.%s", dir, i, FMTS[k]);
		struct sc_err e = {0};
		if (cell_read_file(c, path, LANG_MAX_PLOT_BYTES, 30, cf, &e) < 0) {
			if (e.errnum != ENOENT)
				missing = false;
			continue;
		}
		*fmt = FMTS[k];
		if (cf->truncated)
			return 0;
		if (k == 0)
			return cf->len >= sizeof(PNG_MAGIC) && !memcmp(cf->data, PNG_MAGIC, sizeof(PNG_MAGIC));
		return html_ok(cf->data, cf->len);
	}
	return missing ? -ENOENT : -1;
}

int lang_i_read_plots(struct cell *c, const char *dir, long count, const struct lang_sink *sink,
		      struct lang_result *res, struct sc_err *err)
{
	(void)err;
	size_t total = 0;
	long max = count < 0 ? LANG_MAX_PLOTS : count;
	/* a run's own plot directory is made with its first plot: when it
	 * is not there, one round trip says so */
	struct cell_file probe;
	struct sc_err pe = {0};
	if (count < 0) {
		if (cell_read_file(c, dir, 1, 30, &probe, &pe) == 0)
			free(probe.data); /* not a directory: the reads below fail */
		else if (pe.errnum == ENOENT)
			return 0;
	}
	long i;
	for (i = 1; i <= max; i++) {
		if (res->nplots >= LANG_MAX_PLOTS) {
			res->plots_truncated = true;
			break;
		}
		struct cell_file cf;
		const char *fmt;
		int rc = read_plot(c, dir, i, &cf, &fmt);
		if (rc < 0) {
			if (count < 0 && rc == -ENOENT)
				break;
			continue; /* gone (cleared meanwhile), or not a file: skip it */
		}
		if (rc == 0 || total + cf.len > LANG_MAX_PLOTS_TOTAL) {
			res->plots_truncated = true; /* over a bound, or not a plot */
			free(cf.data);
			continue;
		}
		total += cf.len;
		struct lang_plot *p = &res->plots[res->nplots++];
		p->format = fmt;
		p->data = cf.data;
		p->len = cf.len;
		if (sink && sink->fn) {
			struct lang_event ev = {.type = LANG_EV_PLOT, .data = p->data, .len = p->len,
						.format = fmt};
			sink->fn(sink->ctx, &ev);
		}
	}
	/* every slot was there: were more made than kept (sc_plots.py and
	 * profile.R leave plot-more)? */
	if (count < 0 && i > max && !res->plots_truncated) {
		char path[LANG_MAX_PATH + 64];
		snprintf(path, sizeof(path), "%s/plot-more", dir);
		if (cell_read_file(c, path, 1, 30, &probe, &pe) == 0) {
			free(probe.data);
			res->plots_truncated = true;
		}
	}
	return 0;
}
