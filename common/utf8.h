/* UTF-8 at the end of a buffer still being filled (a stream's output cut
 * into pieces): what to hold back until the next bytes come. Pure. */
#pragma once
#include <stddef.h>

/* How many bytes at the end of s[0..len) begin a sequence whose lead byte
 * asks for more bytes than are there (0 to 3). Only the lead byte is
 * looked at (0xC0-0xDF: 2, 0xE0-0xEF: 3, 0xF0-0xF7: 4): a sequence that
 * will be ill-formed is held back all the same, and whoever encodes the
 * text later replaces it (common/parse.h's sc_utf8_len says which bytes
 * are well-formed). */
size_t sc_utf8_unfinished(const unsigned char *s, size_t len);
