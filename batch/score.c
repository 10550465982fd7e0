/* The scorers of sandcell batch: pure functions from (answer, expected) to a
 * score in [0, 1]. The command scorer's cell part is in run.c; how its
 * output is read is here. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "batch_priv.h"

static const char *const BATCH_SCORER_NAMES[] = {
	[BATCH_SCORER_EXACT] = "exact",   [BATCH_SCORER_NUMERIC] = "numeric",   [BATCH_SCORER_CHOICE] = "choice",
	[BATCH_SCORER_BOXED] = "boxed",   [BATCH_SCORER_CONTAINS] = "contains", [BATCH_SCORER_COMMAND] = "command",
	[BATCH_SCORER_REWARD] = "reward", [BATCH_SCORER_SWE] = "swe",
};

const char *batch_scorer_name(enum batch_scorer_kind k)
{
	return (size_t)k < SC_ARRAY_LEN(BATCH_SCORER_NAMES) ? BATCH_SCORER_NAMES[k] : "?";
}

int batch_scorer_kind_parse(const char *name, enum batch_scorer_kind *out)
{
	for (size_t i = 0; i <= BATCH_SCORER_COMMAND; i++) /* not reward: --benchmark's own */
		if (name && !strcmp(name, BATCH_SCORER_NAMES[i])) {
			*out = (enum batch_scorer_kind)i;
			return 0;
		}
	return -1;
}

/* ---- small text helpers ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* [*b, *e) without surrounding white space */
static void trim_span(const char *s, const char **b, const char **e)
{
	const char *p = s, *q = s + strlen(s);
	while (p < q && is_space(*p))
		p++;
	while (q > p && is_space(q[-1]))
		q--;
	*b = p;
	*e = q;
}

static char *trimmed(const char *s)
{
	const char *b, *e;
	trim_span(s ? s : "", &b, &e);
	return strndup(b, (size_t)(e - b));
}

double batch_score_exact(const char *answer, const char *expected)
{
	if (!answer || !expected)
		return 0;
	const char *ab, *ae, *eb, *ee;
	trim_span(answer, &ab, &ae);
	trim_span(expected, &eb, &ee);
	return (ae - ab == ee - eb && !memcmp(ab, eb, (size_t)(ae - ab))) ? 1 : 0;
}

double batch_score_contains(const char *answer, const char *expected)
{
	if (!answer || !expected)
		return 0;
	_cleanup_free_ char *e = trimmed(expected);
	return e && *e && strstr(answer, e) ? 1 : 0;
}

/* ---- numbers ---- */

/* Copy s without what does not change a number's value: white space, '$',
 * thousands commas (a comma followed by exactly three digits), a trailing
 * '.' or '%'. */
static char *number_text(const char *s)
{
	_cleanup_free_ char *t = trimmed(s);
	if (!t)
		return NULL;
	size_t n = strlen(t);
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		if (is_space(c) || c == '$')
			continue;
		if (c == '\\' && t[i + 1] == '$') /* \$ */
			continue;
		if (c == ',' && o > out && isdigit((unsigned char)o[-1]) && isdigit((unsigned char)t[i + 1]) &&
		    isdigit((unsigned char)t[i + 2]) && isdigit((unsigned char)t[i + 3]) &&
		    !isdigit((unsigned char)t[i + 4]))
			continue;
		*o++ = c;
	}
	while (o > out && (o[-1] == '.' || o[-1] == '%'))
		o--;
	*o = '\0';
	return out;
}

/* A plain decimal number taking all of s (no hex, inf or nan). */
static bool plain_number(const char *s, double *out)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p) && !strchr("+-.eE", *p))
			return false;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || end == s || !isfinite(v))
		return false;
	*out = v;
	return true;
}

/* sscanf of fmt (ending in %n) that consumed all of s */
static bool whole_frac(const char *s, const char *fmt, char *num, char *den)
{
	int used = -1;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	bool ok = sscanf(s, fmt, num, den, &used) == 2 && used >= 0 && !s[used];
#pragma GCC diagnostic pop
	return ok;
}

/* a/b, \frac{a}{b} or \frac ab with a sign in front */
static bool fraction(const char *s, double *out)
{
	double sign = 1, a, b;
	if (*s == '-' || *s == '+')
		sign = *s++ == '-' ? -1 : 1;
	char num[64], den[64];
	const char *slash = strchr(s, '/');
	if (slash && !strchr(slash + 1, '/')) {
		size_t n = (size_t)(slash - s);
		if (n == 0 || n >= sizeof(num))
			return false;
		memcpy(num, s, n);
		num[n] = '\0';
		snprintf(den, sizeof(den), "%s", slash + 1);
	} else if (whole_frac(s, "\\frac{%63[^}]}{%63[^}]}%n", num, den) ||
		   whole_frac(s, "\\dfrac{%63[^}]}{%63[^}]}%n", num, den)) {
		/* ok */
	} else if (!strncmp(s, "\\frac", 5) && isdigit((unsigned char)s[5]) &&
		   isdigit((unsigned char)s[6]) && !s[7]) {
		snprintf(num, sizeof(num), "%c", s[5]);
		snprintf(den, sizeof(den), "%c", s[6]);
	} else {
		return false;
	}
	if (!plain_number(num, &a) || !plain_number(den, &b) || b == 0)
		return false;
	*out = sign * a / b;
	return true;
}

bool batch_score_parse_number(const char *s, double *out)
{
	_cleanup_free_ char *t = number_text(s ? s : "");
	return t && (plain_number(t, out) || fraction(t, out));
}

/* How many bytes at p continue a number being read: a digit or '.', an
 * exponent with its sign, a fraction bar before a digit, a thousands comma
 * followed by exactly three digits; 0 at its end. */
static size_t number_char_run(const char *p)
{
	if (isdigit((unsigned char)*p) || *p == '.')
		return 1;
	if (*p == ',' && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
	    isdigit((unsigned char)p[3]) && !isdigit((unsigned char)p[4]))
		return 1;
	if ((*p == 'e' || *p == 'E') &&
	    (isdigit((unsigned char)p[1]) || ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2]))))
		return 2;
	if (*p == '/' && isdigit((unsigned char)p[1]))
		return 1;
	return 0;
}

bool batch_score_last_number(const char *s, double *out)
{
	bool found = false;
	if (!s)
		return false;
	for (const char *p = s; *p;) {
		bool start = isdigit((unsigned char)*p) ||
			     (*p == '.' && isdigit((unsigned char)p[1]));
		if (!start || (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '.'))) {
			p++;
			continue;
		}
		const char *b = p;
		if (p > s && p[-1] == '-' && (p - 1 == s || !isalnum((unsigned char)p[-2])))
			b = p - 1;
		char buf[128];
		size_t n = 0;
		bool too_long = false; /* longer than buf: not a number anyone wrote */
		if (b < p)
			buf[n++] = '-';
		for (;;) {
			size_t take = number_char_run(p);
			if (!take)
				break;
			if (*p == ',') { /* thousands separator: dropped */
				p++;
				continue;
			}
			if (take > sizeof(buf) - 1 - n) {
				too_long = true;
			} else {
				memcpy(buf + n, p, take);
				n += take;
			}
			p += take;
		}
		if (too_long)
			continue;
		while (n && buf[n - 1] == '.') /* "42." ends a sentence */
			n--;
		buf[n] = '\0';
		double v;
		if (plain_number(buf, &v) || fraction(buf, &v)) {
			*out = v;
			found = true;
		}
	}
	return found;
}

static bool close_enough(double a, double e, double tol)
{
	double d = fabs(a - e);
	return d <= 1e-12 || d <= tol * fmax(fabs(a), fabs(e));
}

double batch_score_numeric(const char *answer, const char *expected, double tolerance)
{
	double a, e;
	if (!answer || !expected)
		return 0;
	if (!batch_score_parse_number(expected, &e) && !batch_score_last_number(expected, &e))
		return 0;
	if (!batch_score_parse_number(answer, &a)) {
		_cleanup_free_ char *boxed = batch_score_boxed_extract(answer);
		if (!(boxed && batch_score_parse_number(boxed, &a)) && !batch_score_last_number(answer, &a))
			return 0;
	}
	return close_enough(a, e, tolerance >= 0 ? tolerance : BATCH_DEFAULT_TOLERANCE) ? 1 : 0;
}

/* ---- multiple choice ---- */

/* Letters of s when s is nothing but choice letters and separators, e.g.
 * "B", "(B)", "A, C", "AC", "**B**", "[A] and [D]". */
static unsigned only_letters(const char *s, bool letters[26])
{
	bool seen[26] = {false};
	unsigned n = 0, upper = 0, lower = 0;
	for (const char *p = s; *p; p++) {
		char c = *p;
		if (isalpha((unsigned char)c)) {
			if (!strncasecmp(p, "and", 3) && !isalpha((unsigned char)p[3]) &&
			    (p == s || !isalpha((unsigned char)p[-1]))) {
				p += 2;
				continue;
			}
			isupper((unsigned char)c) ? upper++ : lower++;
			int k = toupper((unsigned char)c) - 'A';
			if (seen[k])
				return 0;
			seen[k] = true;
			n++;
		} else if (!strchr(" \t\r\n,;/&()[]{}*.:'\"$", c)) {
			return 0;
		}
	}
	if (n == 0 || (upper && lower))
		return 0;
	memcpy(letters, seen, sizeof(seen));
	return n;
}

/* After "answer", "option" or "choice" (the last one): "is", ":", "=",
 * then letters separated by commas, "and", spaces; each may be wrapped. */
static unsigned letters_after_keyword(const char *s, bool letters[26])
{
	static const char *const keys[] = {"answer", "option", "choice"};
	const char *at = NULL;
	for (size_t k = 0; k < SC_ARRAY_LEN(keys); k++)
		for (const char *p = s; (p = strcasestr(p, keys[k])); p++)
			if (!at || p > at)
				at = p + strlen(keys[k]);
	if (!at)
		return 0;
	const char *p = at;
	while (*p == 's' || *p == 'S') /* answers, options */
		p++;
	bool seen[26] = {false};
	unsigned n = 0;
	for (;;) {
		while (*p && strchr(" \t\r\n:=*()[]{},;/&'\"", *p))
			p++;
		if (!strncasecmp(p, "is ", 3) || !strncasecmp(p, "are", 3)) {
			p += 3;
			continue;
		}
		if (!strncasecmp(p, "and", 3) && !isalpha((unsigned char)p[3])) {
			p += 3;
			continue;
		}
		if (isupper((unsigned char)*p) && !isalpha((unsigned char)p[1])) {
			if (!seen[*p - 'A'])
				n++;
			seen[*p - 'A'] = true;
			p++;
			continue;
		}
		break;
	}
	if (n)
		memcpy(letters, seen, sizeof(seen));
	return n;
}

/* The last "(X)" with X a capital letter. */
static unsigned last_parenthesised(const char *s, bool letters[26])
{
	const char *hit = NULL;
	for (const char *p = s; (p = strchr(p, '(')); p++)
		if (isupper((unsigned char)p[1]) && p[2] == ')')
			hit = p + 1;
	if (!hit)
		return 0;
	memset(letters, 0, 26 * sizeof(bool));
	letters[*hit - 'A'] = true;
	return 1;
}

unsigned batch_score_choice_letters(const char *s, bool letters[26])
{
	memset(letters, 0, 26 * sizeof(bool));
	if (!s)
		return 0;
	_cleanup_free_ char *t = trimmed(s);
	_cleanup_free_ char *boxed = t ? batch_score_boxed_extract(t) : NULL;
	const char *text = boxed ? boxed : t;
	if (!text || strlen(text) > BATCH_MAX_ANSWER)
		return 0;
	unsigned n;
	if ((n = only_letters(text, letters)) || (n = letters_after_keyword(text, letters)) ||
	    (n = last_parenthesised(text, letters)))
		return n;
	return 0;
}

double batch_score_choice(const char *answer, const char *expected)
{
	bool a[26], e[26];
	unsigned na = batch_score_choice_letters(answer, a), ne = batch_score_choice_letters(expected, e);
	if (!na || !ne)
		return 0;
	unsigned both = 0;
	for (int i = 0; i < 26; i++)
		both += a[i] && e[i];
	return 2.0 * both / (na + ne); /* F1 */
}

/* ---- \boxed{} ---- */

char *batch_score_boxed_extract(const char *s)
{
	if (!s)
		return NULL;
	const char *at = NULL;
	size_t klen = 0;
	static const char *const keys[] = {"\\boxed", "\\fbox"};
	for (size_t k = 0; k < SC_ARRAY_LEN(keys); k++)
		for (const char *p = s; (p = strstr(p, keys[k])); p++)
			if (!at || p > at) {
				at = p;
				klen = strlen(keys[k]);
			}
	if (!at)
		return NULL;
	const char *p = at + klen;
	while (*p == ' ')
		p++;
	if (*p != '{') { /* \boxed 5 */
		const char *e = p;
		while (*e && !is_space(*e) && *e != '$')
			e++;
		return e > p ? strndup(p, (size_t)(e - p)) : NULL;
	}
	int depth = 0;
	for (const char *q = p; *q; q++) {
		if (*q == '\\' && q[1]) {
			q++;
			continue;
		}
		if (*q == '{')
			depth++;
		else if (*q == '}' && --depth == 0)
			return strndup(p + 1, (size_t)(q - p - 1));
	}
	return NULL; /* unbalanced */
}

static void erase_all(char *s, const char *what)
{
	size_t n = strlen(what);
	for (char *p; (p = strstr(s, what));)
		memmove(p, p + n, strlen(p + n) + 1);
}

static void replace_all(char *s, const char *what, const char *with)
{
	/* only shrinking or equal-length replacements */
	size_t n = strlen(what), m = strlen(with);
	for (char *p = s; (p = strstr(p, what));) {
		memcpy(p, with, m);
		memmove(p + m, p + n, strlen(p + n) + 1);
		p += m;
	}
}

/* \text{x} -> x for the wrappers that only change the font */
static void unwrap(char *s, const char *cmd)
{
	size_t n = strlen(cmd);
	for (char *p; (p = strstr(s, cmd));) {
		char *b = p + n;
		if (*b != '{') {
			memmove(p, b, strlen(b) + 1);
			continue;
		}
		int depth = 0;
		char *q = b;
		for (; *q; q++) {
			if (*q == '{')
				depth++;
			else if (*q == '}' && --depth == 0)
				break;
		}
		if (!*q) /* unbalanced: drop just the command */
			memmove(p, b, strlen(b) + 1);
		else {
			memmove(q, q + 1, strlen(q + 1) + 1);
			memmove(p, b + 1, strlen(b + 1) + 1);
		}
	}
}

char *batch_score_math_normalize(const char *s)
{
	char *t = trimmed(s ? s : "");
	if (!t)
		return NULL;
	static const char *const wrappers[] = {"\\text", "\\textbf", "\\mathrm", "\\mathbf", "\\mbox"};
	for (size_t i = 0; i < SC_ARRAY_LEN(wrappers); i++)
		unwrap(t, wrappers[i]);
	static const char *const noise[] = {"\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ",
					    "^\\circ", "^{\\circ}", "\\%", "\\$", "$", "%", "~",
					    "\\displaystyle"};
	for (size_t i = 0; i < SC_ARRAY_LEN(noise); i++)
		erase_all(t, noise[i]);
	replace_all(t, "\\dfrac", "\\frac");
	replace_all(t, "\\tfrac", "\\frac");
	/* white space */
	char *o = t;
	for (char *p = t; *p; p++)
		if (!is_space(*p))
			*o++ = *p;
	*o = '\0';
	/* "x=5" -> "5" (one variable name) */
	if (isalpha((unsigned char)t[0]) && t[1] == '=' && t[2])
		memmove(t, t + 2, strlen(t + 2) + 1);
	size_t n = strlen(t);
	while (n && t[n - 1] == '.')
		t[--n] = '\0';
	/* thousands commas: 1,000 -> 1000 */
	for (char *p = t; (p = strchr(p, ','));) {
		if (p > t && isdigit((unsigned char)p[-1]) && isdigit((unsigned char)p[1]) &&
		    isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
		    !isdigit((unsigned char)p[4]) && p[4] != '.')
			memmove(p, p + 1, strlen(p + 1) + 1);
		else
			p++;
	}
	return t;
}

static bool math_value(const char *norm, double *v)
{
	return plain_number(norm, v) || fraction(norm, v);
}

double batch_score_boxed(const char *answer, const char *expected)
{
	if (!answer || !expected)
		return 0;
	_cleanup_free_ char *ab = batch_score_boxed_extract(answer);
	_cleanup_free_ char *eb = batch_score_boxed_extract(expected);
	_cleanup_free_ char *a = batch_score_math_normalize(ab ? ab : answer);
	_cleanup_free_ char *e = batch_score_math_normalize(eb ? eb : expected);
	if (!a || !e || !*e)
		return 0;
	if (!strcmp(a, e))
		return 1;
	double x, y;
	if (math_value(a, &x) && math_value(e, &y) && close_enough(x, y, 1e-9))
		return 1;
	return 0;
}

double batch_score_answer(const struct batch_scorer *s, const char *answer, const char *expected)
{
	switch (s->kind) {
	case BATCH_SCORER_EXACT:
		return batch_score_exact(answer, expected);
	case BATCH_SCORER_NUMERIC:
		return batch_score_numeric(answer, expected, s->tolerance);
	case BATCH_SCORER_CHOICE:
		return batch_score_choice(answer, expected);
	case BATCH_SCORER_BOXED:
		return batch_score_boxed(answer, expected);
	case BATCH_SCORER_CONTAINS:
		return batch_score_contains(answer, expected);
	default:
		return -1;
	}
}

double batch_score_from_checker(int exit_code, const char *out, size_t len)
{
	/* the last non-empty line */
	const char *end = out ? out + len : NULL, *b = NULL, *e = NULL;
	while (end && end > out) {
		const char *q = end;
		while (q > out && is_space(q[-1]))
			q--;
		if (q == out)
			break;
		const char *p = q;
		while (p > out && p[-1] != '\n')
			p--;
		b = p;
		e = q;
		break;
	}
	if (b && e - b < 64) {
		char buf[64];
		memcpy(buf, b, (size_t)(e - b));
		buf[e - b] = '\0';
		const char *p = buf;
		while (is_space(*p))
			p++;
		double v;
		if (plain_number(p, &v))
			return v < 0 ? 0 : v > 1 ? 1 : v;
	}
	return exit_code == 0 ? 1 : 0;
}
