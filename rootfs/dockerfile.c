/* The Dockerfile subset `image build --dockerfile` understands: splitting
 * the text into instructions (comments, backslash continuations, exec and
 * shell forms) and arguments into words (quotes, escapes, $VAR and
 * ${VAR[:-|:+WORD]}). Pure: no I/O, no printing; everything is bounded.
 * What the subset leaves out is refused here with FILE:LINE, so a build
 * never half-understands a file. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <string.h>

#include "../common/sbuf.h"
#include "rootfs.h"

static const char *const OP_NAMES[] = {
	[ROOTFS_DF_FROM] = "FROM",   [ROOTFS_DF_RUN] = "RUN",         [ROOTFS_DF_COPY] = "COPY",
	[ROOTFS_DF_ADD] = "ADD",     [ROOTFS_DF_ENV] = "ENV",         [ROOTFS_DF_WORKDIR] = "WORKDIR",
	[ROOTFS_DF_USER] = "USER",   [ROOTFS_DF_ARG] = "ARG",         [ROOTFS_DF_LABEL] = "LABEL",
	[ROOTFS_DF_CMD] = "CMD",     [ROOTFS_DF_ENTRYPOINT] = "ENTRYPOINT",
};

/* Docker instructions outside the subset: named in the refusal. */
static const char *const REFUSED[] = {"EXPOSE", "VOLUME", "HEALTHCHECK", "ONBUILD", "SHELL",
				      "STOPSIGNAL", "MAINTAINER"};

const char *rootfs_df_op_name(enum rootfs_df_op op)
{
	return (unsigned)op < SC_ARRAY_LEN(OP_NAMES) ? OP_NAMES[op] : "?";
}

/* ---- a growing string, bounded ---- */

struct sbuf {
	struct sc_sbuf s;
	size_t max;
};

static int sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->s.len + n > b->max)
		return -1;
	sc_sbuf_add(&b->s, s, n);
	return b->s.oom ? -1 : 0;
}

/* ---- words ---- */

struct words {
	char **v;
	size_t n;
	size_t total; /* bytes in all words */
};

static int words_add(struct words *w, struct sbuf *cur, struct sc_err *err)
{
	if (w->n >= ROOTFS_DF_MAX_WORDS)
		return sc_fail(err, 0, "more than %d words", ROOTFS_DF_MAX_WORDS);
	if ((w->total += cur->s.len) > ROOTFS_DF_MAX_LINE * 4)
		return sc_fail(err, 0, "arguments longer than %d bytes", ROOTFS_DF_MAX_LINE * 4);
	char **nv = realloc(w->v, (w->n + 2) * sizeof(*nv));
	if (!nv)
		return sc_fail(err, ENOMEM, "words");
	w->v = nv;
	w->v[w->n] = sc_sbuf_take(&cur->s);
	if (!w->v[w->n])
		return sc_fail(err, ENOMEM, "words");
	w->v[++w->n] = NULL;
	return 0;
}

static bool name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A variable reference at s[0] == '$'; appends its value and returns the
 * bytes consumed, or 0 when this '$' is literal, -1 on a bad reference. */
static ssize_t expand_var(const char *s, rootfs_df_lookup fn, void *ctx, struct sbuf *out,
			  struct sc_err *err)
{
	const char *name, *word = NULL;
	size_t nlen = 0, wlen = 0, used;
	char mod = 0;
	if (s[1] == '{') {
		name = s + 2;
		while (name_char(name[nlen]))
			nlen++;
		if (!nlen || !name_start(name[0]))
			return sc_fail(err, 0, "bad variable reference '%.20s'", s);
		const char *p = name + nlen;
		if (p[0] == ':' && (p[1] == '-' || p[1] == '+')) {
			mod = p[1];
			word = p + 2;
			const char *end = strchr(word, '}');
			if (!end)
				return sc_fail(err, 0, "unterminated '${'");
			wlen = (size_t)(end - word);
			p = end;
		}
		if (*p != '}')
			return sc_fail(err, 0, "bad variable reference '%.20s'", s);
		used = (size_t)(p + 1 - s);
	} else if (name_start(s[1])) {
		name = s + 1;
		while (name_char(name[nlen]))
			nlen++;
		used = 1 + nlen;
	} else {
		return 0;
	}
	char key[256];
	if (nlen >= sizeof(key))
		return sc_fail(err, 0, "variable name longer than %zu bytes", sizeof(key) - 1);
	memcpy(key, name, nlen);
	key[nlen] = '\0';
	const char *val = fn ? fn(ctx, key) : NULL;
	bool set = val && val[0];
	int rc = 0;
	if (mod == '-')
		rc = set ? sb_put(out, val, strlen(val)) : sb_put(out, word, wlen);
	else if (mod == '+')
		rc = set ? sb_put(out, word, wlen) : 0;
	else if (val)
		rc = sb_put(out, val, strlen(val));
	if (rc < 0)
		return sc_fail(err, 0, "a word longer than %d bytes", ROOTFS_DF_MAX_LINE);
	return (ssize_t)used;
}

int rootfs_df_words(const char *text, rootfs_df_lookup fn, void *ctx, char ***out, struct sc_err *err)
{
	*out = NULL;
	struct words w = {0};
	struct sbuf cur = {.max = ROOTFS_DF_MAX_LINE};
	bool in_word = false;
	char quote = 0;
	int rc = 0;
	for (const char *p = text; *p && rc == 0;) {
		char c = *p;
		if (!quote && isspace((unsigned char)c)) {
			if (in_word)
				rc = words_add(&w, &cur, err);
			in_word = false;
			p++;
			continue;
		}
		in_word = true;
		if (quote != '\'' && c == '$') {
			ssize_t n = expand_var(p, fn, ctx, &cur, err);
			if (n < 0) {
				rc = -1;
				break;
			}
			if (n > 0) {
				p += n;
				continue;
			}
		}
		if (!quote && (c == '"' || c == '\'')) {
			quote = c;
			p++;
			continue;
		}
		if (quote && c == quote) {
			quote = 0;
			p++;
			continue;
		}
		if (c == '\\' && quote != '\'' && p[1] &&
		    (!quote || p[1] == '"' || p[1] == '\\' || p[1] == '$')) {
			p++;
			c = *p;
		}
		if (sb_put(&cur, &c, 1) < 0)
			rc = sc_fail(err, 0, "a word longer than %d bytes", ROOTFS_DF_MAX_LINE);
		p++;
	}
	if (rc == 0 && quote)
		rc = sc_fail(err, 0, "unterminated %s quote", quote == '"' ? "double" : "single");
	if (rc == 0 && in_word)
		rc = words_add(&w, &cur, err);
	sc_sbuf_free(&cur.s);
	if (rc == 0 && !w.v && !(w.v = calloc(1, sizeof(*w.v))))
		rc = sc_fail(err, ENOMEM, "words");
	if (rc < 0) {
		for (size_t i = 0; i < w.n; i++)
			free(w.v[i]);
		free(w.v);
		return -1;
	}
	*out = w.v;
	return 0;
}

/* ---- instructions ---- */

/* A JSON array of strings, or NULL when the text is not one (Docker then
 * takes the shell form). */
static char **json_argv(const char *text)
{
	/* nothing may follow the array: `["a"] && b` is the shell form */
	cJSON *j = cJSON_ParseWithOpts(text, NULL, true);
	if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) > ROOTFS_DF_MAX_WORDS) {
		cJSON_Delete(j);
		return NULL;
	}
	int n = cJSON_GetArraySize(j);
	char **v = calloc((size_t)n + 1, sizeof(*v));
	const cJSON *it;
	int k = 0;
	cJSON_ArrayForEach(it, j)
	{
		if (!v || !cJSON_IsString(it) || !(v[k++] = strdup(it->valuestring))) {
			rootfs_strv_free(v);
			cJSON_Delete(j);
			return NULL;
		}
	}
	cJSON_Delete(j);
	return v;
}

static bool has_heredoc(const char *s)
{
	for (const char *p = strstr(s, "<<"); p; p = strstr(p + 2, "<<")) {
		const char *q = p + 2;
		if (*q == '-')
			q++;
		if (*q == '"' || *q == '\'')
			q++;
		if (name_start(*q))
			return true;
	}
	return false;
}

struct parse {
	const char *file;
	struct rootfs_dockerfile *df;
	bool seen_from;
	struct sc_err *err;
};

#define FAIL_AT(ps, line, ...) \
	(sc_fail((ps)->err, 0, __VA_ARGS__), sc_err_wrap((ps)->err, "%s:%u", (ps)->file, (line)))

/* Flags (--x[=y]) in front of the arguments are outside the subset. */
static int refuse_flags(struct parse *ps, unsigned line, const char *op, const char *args)
{
	if (strncmp(args, "--", 2) != 0)
		return 0;
	size_t n = strcspn(args + 2, "= \t");
	return FAIL_AT(ps, line, "%s --%.*s is not supported", op, (int)(n > 40 ? 40 : n), args + 2);
}

static int check_from(struct parse *ps, unsigned line, const char *args)
{
	if (ps->seen_from)
		return FAIL_AT(ps, line, "a second FROM (multi-stage build) is not supported");
	ps->seen_from = true;
	char **w;
	struct sc_err e = {0};
	if (rootfs_df_words(args, NULL, NULL, &w, &e) < 0)
		return FAIL_AT(ps, line, "FROM: %s", e.msg);
	size_t n = 0;
	while (w[n])
		n++;
	int rc = 0;
	if (n >= 2 && !strcasecmp(w[1], "AS"))
		rc = FAIL_AT(ps, line, "FROM ... AS (multi-stage build) is not supported");
	else if (n != 1)
		rc = FAIL_AT(ps, line, "FROM takes one image name");
	rootfs_strv_free(w);
	return rc;
}

/* Syntax checks that need no variable values. */
static int check_args(struct parse *ps, unsigned line, enum rootfs_df_op op, const char *args,
		      bool exec_form)
{
	const char *name = rootfs_df_op_name(op);
	if (op == ROOTFS_DF_FROM || op == ROOTFS_DF_RUN || op == ROOTFS_DF_COPY || op == ROOTFS_DF_ADD)
		if (refuse_flags(ps, line, name, args) < 0)
			return -1;
	if ((op == ROOTFS_DF_RUN || op == ROOTFS_DF_COPY || op == ROOTFS_DF_ADD) && !exec_form &&
	    has_heredoc(args))
		return FAIL_AT(ps, line, "%s with a heredoc (<<WORD) is not supported", name);
	if (op == ROOTFS_DF_FROM)
		return check_from(ps, line, args);
	if (!ps->seen_from && op != ROOTFS_DF_ARG)
		return FAIL_AT(ps, line, "%s before FROM", name);
	if (exec_form || op == ROOTFS_DF_RUN || op == ROOTFS_DF_CMD || op == ROOTFS_DF_ENTRYPOINT)
		return 0; /* the shell's business */
	char **w;
	struct sc_err e = {0};
	if (rootfs_df_words(args, NULL, NULL, &w, &e) < 0)
		return FAIL_AT(ps, line, "%s: %s", name, e.msg);
	size_t n = 0;
	while (w[n])
		n++;
	int rc = 0;
	if ((op == ROOTFS_DF_COPY || op == ROOTFS_DF_ADD) && n < 2)
		rc = FAIL_AT(ps, line, "%s needs a source and a destination", name);
	else if ((op == ROOTFS_DF_WORKDIR || op == ROOTFS_DF_USER || op == ROOTFS_DF_ARG) && n != 1)
		rc = FAIL_AT(ps, line, "%s takes one argument", name);
	else if (op == ROOTFS_DF_LABEL)
		for (size_t i = 0; i < n && rc == 0; i++)
			if (!strchr(w[i], '=') || w[i][0] == '=')
				rc = FAIL_AT(ps, line, "LABEL takes KEY=VALUE pairs");
	rootfs_strv_free(w);
	return rc;
}

static int add_instr(struct parse *ps, unsigned line, const char *text)
{
	size_t klen = 0;
	while (isalpha((unsigned char)text[klen]))
		klen++;
	if (!klen || (text[klen] && !isspace((unsigned char)text[klen])))
		return FAIL_AT(ps, line, "expected an instruction, got '%.40s'", text);
	char key[16];
	snprintf(key, sizeof(key), "%.*s", (int)(klen < sizeof(key) ? klen : sizeof(key) - 1), text);
	for (char *k = key; *k; k++)
		*k = (char)toupper((unsigned char)*k);
	int op = -1;
	for (size_t i = 0; i < SC_ARRAY_LEN(OP_NAMES); i++)
		if (klen < sizeof(key) && !strcmp(key, OP_NAMES[i]))
			op = (int)i;
	for (size_t i = 0; op < 0 && i < SC_ARRAY_LEN(REFUSED); i++)
		if (!strcmp(key, REFUSED[i]))
			return FAIL_AT(ps, line, "%s is not supported", key);
	if (op < 0)
		return FAIL_AT(ps, line, "unknown instruction '%.16s'", key);
	const char *args = text + klen;
	while (isspace((unsigned char)*args))
		args++;
	if (!*args)
		return FAIL_AT(ps, line, "%s needs arguments", key);
	if (ps->df->n >= ROOTFS_DF_MAX_INSTR)
		return FAIL_AT(ps, line, "more than %d instructions", ROOTFS_DF_MAX_INSTR);
	char **argv = NULL;
	if (args[0] == '[' && (op == ROOTFS_DF_RUN || op == ROOTFS_DF_CMD || op == ROOTFS_DF_ENTRYPOINT ||
			       op == ROOTFS_DF_COPY || op == ROOTFS_DF_ADD))
		argv = json_argv(args);
	if (argv && !argv[0] && op != ROOTFS_DF_CMD && op != ROOTFS_DF_ENTRYPOINT) {
		rootfs_strv_free(argv);
		return FAIL_AT(ps, line, "%s needs arguments", key);
	}
	if (argv && (op == ROOTFS_DF_COPY || op == ROOTFS_DF_ADD) && !argv[1]) {
		rootfs_strv_free(argv);
		return FAIL_AT(ps, line, "%s needs a source and a destination", key);
	}
	if (check_args(ps, line, (enum rootfs_df_op)op, args, argv != NULL) < 0) {
		rootfs_strv_free(argv);
		return -1;
	}
	struct rootfs_df_instr *nv = realloc(ps->df->v, (ps->df->n + 1) * sizeof(*nv));
	char *copy = strdup(args);
	if (!nv || !copy) {
		if (nv)
			ps->df->v = nv;
		free(copy);
		rootfs_strv_free(argv);
		return sc_fail(ps->err, ENOMEM, "parse %s", ps->file);
	}
	ps->df->v = nv;
	ps->df->v[ps->df->n++] = (struct rootfs_df_instr){
		.op = (enum rootfs_df_op)op, .line = line, .exec_form = argv != NULL,
		.argv = argv, .text = copy};
	return 0;
}

/* Trailing whitespace off [s, s+n); returns the new length. */
static size_t rtrim(const char *s, size_t n)
{
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return n;
}

int rootfs_df_parse(const char *text, size_t len, const char *file, struct rootfs_dockerfile *out,
		    struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	struct parse ps = {.file = file ? file : "Dockerfile", .df = out, .err = err};
	if (len > ROOTFS_DF_MAX_SIZE)
		return sc_fail(err, 0, "%s: larger than %d bytes", ps.file, ROOTFS_DF_MAX_SIZE);
	if (memchr(text, '\0', len))
		return sc_fail(err, 0, "%s: contains a NUL byte (not a text file?)", ps.file);
	struct sbuf cur = {.max = ROOTFS_DF_MAX_LINE};
	unsigned lineno = 0, start = 0;
	bool pending = false;
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0;) {
		const char *s = text + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t n = nl ? (size_t)(nl - s) : len - off;
		off += n + (nl ? 1 : 0);
		lineno++;
		if (n > ROOTFS_DF_MAX_LINE) {
			rc = FAIL_AT(&ps, lineno, "line longer than %d bytes", ROOTFS_DF_MAX_LINE);
			break;
		}
		size_t lead = 0;
		while (lead < n && isspace((unsigned char)s[lead]))
			lead++;
		if (lead == n || s[lead] == '#')
			continue; /* blank or comment, also inside a continuation */
		n = rtrim(s, n);
		bool cont = s[n - 1] == '\\';
		if (!pending)
			start = lineno;
		const char *piece = pending ? s : s + lead;
		size_t plen = (size_t)(s + n - piece) - (cont ? 1 : 0);
		if (sb_put(&cur, piece, plen) < 0) {
			rc = FAIL_AT(&ps, start, "instruction longer than %d bytes", ROOTFS_DF_MAX_LINE);
			break;
		}
		pending = cont;
		if (!cont) {
			rc = add_instr(&ps, start, cur.s.s ? cur.s.s : "");
			cur.s.len = 0;
		}
	}
	if (rc == 0 && pending && cur.s.len)
		rc = add_instr(&ps, start, cur.s.s);
	sc_sbuf_free(&cur.s);
	if (rc == 0 && !ps.seen_from)
		rc = sc_fail(err, 0, "%s: no FROM instruction", ps.file);
	if (rc < 0)
		rootfs_df_free(out);
	return rc;
}

void rootfs_df_free(struct rootfs_dockerfile *df)
{
	for (size_t i = 0; i < df->n; i++) {
		rootfs_strv_free(df->v[i].argv);
		free(df->v[i].text);
	}
	free(df->v);
	memset(df, 0, sizeof(*df));
}
