/* Unit tests: size/seconds/id-map/bind/env parsing and output capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/capture.h"
#include "common/parse.h"
#include "runtime/internal.h"

static void test_sizes(void **state)
{
	uint64_t v;
	assert_int_equal(sc_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(sc_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(sc_parse_size("1.5G", &v), 0);
	assert_int_equal(v, 3ULL << 29);
	assert_int_equal(sc_parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(sc_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(sc_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(sc_parse_size("16MB", &v), 0);
	assert_int_equal(v, 16ULL << 20);
	assert_int_equal(sc_parse_size("lots", &v), -1);
	assert_int_equal(sc_parse_size("", &v), -1);
	assert_int_equal(sc_parse_size("-1M", &v), -1);
	assert_int_equal(sc_parse_size("12Q", &v), -1);
	assert_int_equal(sc_parse_size("1MX", &v), -1);
	assert_int_equal(sc_parse_size("99999999999T", &v), -1);
	assert_int_equal(sc_parse_size("nan", &v), -1);
	assert_int_equal(sc_parse_size(" 1M", &v), -1);
}

static void test_seconds_and_numbers(void **state)
{
	double d;
	uint64_t n;
	assert_int_equal(sc_parse_seconds("30", &d), 0);
	assert_true(d == 30.0);
	assert_int_equal(sc_parse_seconds("0.5", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(sc_parse_seconds("0", &d), -1);
	assert_int_equal(sc_parse_seconds("-3", &d), -1);
	assert_int_equal(sc_parse_seconds("inf", &d), -1);
	assert_int_equal(sc_parse_seconds("10s", &d), -1);
	assert_int_equal(sc_parse_seconds("99999999999", &d), -1);
	assert_int_equal(sc_parse_uint("32", 1, 100, &n), 0);
	assert_int_equal(n, 32);
	assert_int_equal(sc_parse_uint("0", 1, 100, &n), -1);
	assert_int_equal(sc_parse_uint("101", 1, 100, &n), -1);
	assert_int_equal(sc_parse_uint("1x", 1, 100, &n), -1);
	assert_int_equal(sc_parse_uint("-1", 0, 100, &n), -1);
	assert_int_equal(sc_parse_cpus("0.5", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(sc_parse_cpus("0.001", &d), -1);
	assert_int_equal(sc_parse_cpus("5000", &d), -1);
}

static void test_subid(void **state)
{
	uint32_t start = 0, count = 0;
	const char *text = "alice:100000:65536\nsandcell:700000:65536\nbob:165536:65536\n";
	assert_int_equal(sc_parse_subid(text, "sandcell", &start, &count), 0);
	assert_int_equal(start, 700000);
	assert_int_equal(count, 65536);
	assert_int_equal(sc_parse_subid(text, "sand", &start, &count), -1);
	assert_int_equal(sc_parse_subid("sandcell:x:1\n", "sandcell", &start, &count), -1);
	assert_int_equal(sc_parse_subid("sandcell:4294967295:10\n", "sandcell", &start, &count), -1);
	assert_int_equal(sc_parse_subid("sandcell:0:10\n", "sandcell", &start, &count), -1);
	assert_int_equal(sc_parse_subid("", "sandcell", &start, &count), -1);
}

static void test_idmap_format(void **state)
{
	char buf[64];
	assert_int_equal(rt_idmap_format(524288, 65536, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 524288 65536\n");
	assert_int_equal(rt_idmap_format(1000, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 1000 1\n");
	assert_int_equal(rt_idmap_format(1000, 0, buf, sizeof(buf)), -1);
	assert_int_equal(rt_idmap_format(UINT32_MAX - 1, 10, buf, sizeof(buf)), -1);
	assert_int_equal(rt_idmap_format(524288, 65536, buf, 8), -1);
}

static void test_bind_env_name(void **state)
{
	struct sc_bind_arg b;
	char a[] = "/host/dir:/data:ro";
	assert_int_equal(sc_parse_bind(a, &b), 0);
	assert_string_equal(b.host, "/host/dir");
	assert_string_equal(b.cell, "/data");
	assert_true(b.readonly);
	assert_false(b.volume);
	char c[] = "/h:/c";
	assert_int_equal(sc_parse_bind(c, &b), 0);
	assert_false(b.readonly);
	char d[] = "/h:/c:rw";
	assert_int_equal(sc_parse_bind(d, &b), 0);
	assert_false(b.readonly);
	char e[] = "/h:/c:xx";
	assert_int_equal(sc_parse_bind(e, &b), -1);
	char f[] = "./rel:/c";
	assert_int_equal(sc_parse_bind(f, &b), -1);
	char v[] = "data-1:/c:ro";
	assert_int_equal(sc_parse_bind(v, &b), 0);
	assert_true(b.volume);
	assert_string_equal(b.host, "data-1");
	assert_true(b.readonly);
	char w[] = "a/b:/c";
	assert_int_equal(sc_parse_bind(w, &b), -1);
	char g[] = "/h:rel";
	assert_int_equal(sc_parse_bind(g, &b), -1);
	char h[] = "/nocolon";
	assert_int_equal(sc_parse_bind(h, &b), -1);

	assert_true(sc_valid_env("FOO=bar"));
	assert_true(sc_valid_env("_X1="));
	assert_false(sc_valid_env("1X=a"));
	assert_false(sc_valid_env("NOEQ"));
	assert_false(sc_valid_env("A-B=c"));
	assert_false(sc_valid_env("=x"));

	assert_true(sc_valid_name("cell-1.a_b"));
	assert_false(sc_valid_name("-x"));
	assert_false(sc_valid_name("a/b"));
	assert_false(sc_valid_name(".."));
	assert_false(sc_valid_name(""));
	char longname[80];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[79] = '\0';
	assert_false(sc_valid_name(longname));
}

static void test_utf8_len(void **state)
{
	(void)state;
	const struct {
		const char *s;
		size_t want;
	} cases[] = {
		{"a", 1},           {"\xc3\xa9", 2},        {"\xe2\x82\xac", 3},
		{"\xf0\x9f\x98\x80", 4}, {"\xf4\x8f\xbf\xbf", 4}, /* U+10FFFF */
		{"\xc0\xaf", 0},     /* overlong '/' */
		{"\xc1\xbf", 0},     {"\xe0\x80\xaf", 0}, {"\xf0\x80\x80\xaf", 0},
		{"\xed\xa0\x80", 0}, /* U+D800 */
		{"\xed\xbf\xbf", 0}, /* U+DFFF */
		{"\xf4\x90\x80\x80", 0}, /* U+110000 */
		{"\xf5\x80\x80\x80", 0}, {"\x80", 0}, {"\xff", 0}, {"\xc3", 0},
		{"\xe2\x82", 0},     {"\xc3(", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(sc_utf8_len((const unsigned char *)cases[i].s, strlen(cases[i].s)),
				 cases[i].want);
	assert_int_equal(sc_utf8_len((const unsigned char *)"\xc3\xa9", 1), 0); /* cut off */
}

static void test_capture_keeps_head_and_tail(void **state)
{
	struct capture c;
	sc_capture_init(&c, 10);
	sc_capture_add(&c, "0123456789", 10);
	assert_false(sc_capture_truncated(&c));
	size_t n;
	char *s = sc_capture_take(&c, &n);
	assert_string_equal(s, "0123456789");
	free(s);
	sc_capture_add(&c, "abcdefghij", 10);
	assert_true(sc_capture_truncated(&c));
	s = sc_capture_take(&c, &n);
	assert_int_equal(n, 10);
	assert_string_equal(s, "01234fghij");
	free(s);
	/* many small writes wrap the tail ring */
	for (int i = 0; i < 7; i++)
		sc_capture_add(&c, "xy", 2);
	s = sc_capture_take(&c, &n);
	assert_string_equal(s, "01234yxyxy");
	free(s);
	sc_capture_free(&c);

	sc_capture_init(&c, 1);
	sc_capture_add(&c, "abc", 3);
	s = sc_capture_take(&c, &n);
	assert_string_equal(s, "c");
	free(s);
	sc_capture_free(&c);
}

/* The buffers grow with the output: nothing for an empty stream, the head
 * by doubling, the tail ring only once output passes the head; what is
 * kept is exact at every size. */
static void test_capture_grows_with_output(void **state)
{
	(void)state;
	struct capture c;
	sc_capture_init(&c, 1 << 20);
	char *out = NULL;
	size_t n = 99;
	bool cut = true;
	sc_capture_result(&c, &out, &n, &cut);
	assert_non_null(out);
	assert_int_equal(n, 0);
	assert_false(cut);
	assert_null(c.head);
	free(out);

	/* 300 KiB in odd-sized chunks: a running byte pattern, kept whole */
	size_t total = 300 * 1024, chunk = 1000;
	char *want = malloc(3 << 20);
	assert_non_null(want);
	for (size_t i = 0; i < (size_t)(3 << 20); i++)
		want[i] = (char)('a' + (i * 7 + i / 251) % 26);
	for (size_t at = 0; at < total; at += chunk)
		sc_capture_add(&c, want + at, at + chunk > total ? total - at : chunk);
	assert_null(c.tail);
	assert_true(c.head_size >= total && c.head_size <= (1 << 19));
	char *s = sc_capture_take(&c, &n);
	assert_int_equal(n, total);
	assert_memory_equal(s, want, total);
	free(s);

	/* on to 3 MiB: the first and the last 512 KiB are kept, and it is cut */
	for (size_t at = total; at < (size_t)(3 << 20); at += 4093)
		sc_capture_add(&c, want + at, at + 4093 > (size_t)(3 << 20) ? (3 << 20) - at : 4093);
	assert_true(sc_capture_truncated(&c));
	assert_int_equal(c.head_size, 1 << 19);
	s = sc_capture_take(&c, &n);
	assert_int_equal(n, 1 << 20);
	assert_memory_equal(s, want, 1 << 19);
	assert_memory_equal(s + (1 << 19), want + (3 << 20) - (1 << 19), 1 << 19);
	free(s);
	free(want);
	sc_capture_free(&c);
	out = NULL;
	sc_capture_result(&c, &out, &n, &cut); /* freed: left alone */
	assert_null(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_seconds_and_numbers),
		cmocka_unit_test(test_subid),
		cmocka_unit_test(test_idmap_format),
		cmocka_unit_test(test_bind_env_name),
		cmocka_unit_test(test_capture_keeps_head_and_tail),
		cmocka_unit_test(test_capture_grows_with_output),
		cmocka_unit_test(test_utf8_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
