#include "utf8.h"

size_t sc_utf8_unfinished(const unsigned char *s, size_t len)
{
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		unsigned char b = s[len - back];
		if ((b & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t want = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 1;
		return want > back ? back : 0;
	}
	return 0;
}
