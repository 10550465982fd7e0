/* Java's class: the public class of the source names its file and what
 * `java` runs; Scala's object: what `scala` runs. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* The identifier after the word "class" at p (which starts a word), or 0. */
static size_t class_after(const char *s, size_t len, size_t p, size_t *start)
{
	if (p + 5 >= len || memcmp(s + p, "class", 5) != 0 || ident_char(s[p + 5]) ||
	    (p > 0 && ident_char(s[p - 1])))
		return 0;
	size_t q = p + 5;
	while (q < len && isspace((unsigned char)s[q]))
		q++;
	size_t b = q;
	while (q < len && ident_char(s[q]))
		q++;
	*start = b;
	return q - b;
}

void lang_java_class(const char *src, size_t len, char *out, size_t size)
{
	size_t first = 0, first_len = 0, pub = 0, pub_len = 0;
	for (size_t p = 0; p < len && !pub_len; p++) {
		size_t b, n = class_after(src, len, p, &b);
		if (!n)
			continue;
		if (!first_len) {
			first = b;
			first_len = n;
		}
		/* "public [final|abstract|static ]*class X" */
		size_t k = p;
		while (k > 0 && isspace((unsigned char)src[k - 1]))
			k--;
		for (int guard = 0; guard < 4; guard++) {
			static const char *const mods[] = {"final", "abstract", "static", "strictfp"};
			bool hit = false;
			for (size_t m = 0; m < SC_ARRAY_LEN(mods); m++) {
				size_t ml = strlen(mods[m]);
				if (k >= ml && !memcmp(src + k - ml, mods[m], ml) &&
				    (k == ml || !ident_char(src[k - ml - 1]))) {
					k -= ml;
					while (k > 0 && isspace((unsigned char)src[k - 1]))
						k--;
					hit = true;
				}
			}
			if (!hit)
				break;
		}
		if (k >= 6 && !memcmp(src + k - 6, "public", 6) && (k == 6 || !ident_char(src[k - 7]))) {
			pub = b;
			pub_len = n;
		}
	}
	size_t b = pub_len ? pub : first, n = pub_len ? pub_len : first_len;
	if (!n || n >= size || isdigit((unsigned char)src[b])) {
		snprintf(out, size, "%s", "Main");
		return;
	}
	memcpy(out, src + b, n);
	out[n] = '\0';
}

void lang_scala_object(const char *src, size_t len, char *out, size_t size)
{
	for (size_t p = 0; p + 6 < len; p++) {
		if (memcmp(src + p, "object", 6) != 0 || ident_char(src[p + 6]) ||
		    (p > 0 && ident_char(src[p - 1])) || !isspace((unsigned char)src[p + 6]))
			continue;
		size_t q = p + 6;
		while (q < len && isspace((unsigned char)src[q]))
			q++;
		size_t b = q;
		while (q < len && (isalnum((unsigned char)src[q]) || src[q] == '_'))
			q++;
		if (q > b && q - b < size && !isdigit((unsigned char)src[b])) {
			memcpy(out, src + b, q - b);
			out[q - b] = '\0';
			return;
		}
	}
	snprintf(out, size, "%s", "Main");
}
