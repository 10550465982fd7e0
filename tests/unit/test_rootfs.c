/* Unit tests for rootfs/'s pure parts: SHA-256, the tar reader, image
 * references, OCI indexes and chain ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/parse.h"
#include "rootfs/internal.h"

static int parse_ref_for_test(const char *in, char *host, char *repo, char *tag, char *digest)
{
	struct ref r;
	if (rootfs_parse_ref(in, &r, NULL) < 0)
		return -1;
	strcpy(host, r.host);
	strcpy(repo, r.repo);
	strcpy(tag, r.tag);
	strcpy(digest, r.digest);
	return 0;
}

static void hex_of(const char *msg, size_t len, char out[65]) { rootfs_sha256_hex(msg, len, out); }

/* Registry references as store names: valid names, one per canonical
 * reference, the parts people recognise up front. */
static void test_ref_store_names(void **state)
{
	(void)state;
	char a[64], b[64], c[64];
	assert_true(rootfs_is_reference("debian:12") && rootfs_is_reference("a/b") &&
		    rootfs_is_reference("x@sha256:00") && !rootfs_is_reference("img-alpha"));
	assert_int_equal(rootfs_ref_store_name("debian:12", a, sizeof(a), NULL), 0);
	assert_int_equal(rootfs_ref_store_name("docker.io/library/debian:12", b, sizeof(b), NULL), 0);
	assert_string_equal(a, b);
	assert_int_equal(strncmp(a, "docker.io_debian_12-", 20), 0);
	assert_int_equal(rootfs_ref_store_name("debian:11", c, sizeof(c), NULL), 0);
	assert_string_not_equal(a, c);
	assert_int_equal(rootfs_ref_store_name("127.0.0.1:5000/test/gamma:1", a, sizeof(a), NULL), 0);
	assert_int_equal(strncmp(a, "127.0.0.1_5000_gamma_1-", 23), 0);
	assert_int_equal(rootfs_ref_store_name("[::1]:5000/a/b:1", a, sizeof(a), NULL), 0);
	assert_true(sc_valid_name(a));
	/* long parts are cut: still a valid name of at most 63 bytes */
	assert_int_equal(rootfs_ref_store_name("registry.example.internal.corp:5000/some-org/"
					       "a-very-long-repository-name-indeed:v1.2.3-"
					       "with-a-long-suffix", a, sizeof(a), NULL), 0);
	assert_true(sc_valid_name(a) && strlen(a) <= 63);
	assert_int_equal(rootfs_ref_store_name("r@sha256:" "0123456789abcdef0123456789abcdef"
					       "0123456789abcdef0123456789abcdef", a, sizeof(a), NULL), 0);
	assert_int_equal(strncmp(a, "docker.io_r_0123456789ab-", 25), 0);
	assert_int_equal(rootfs_ref_store_name("UPPER/Case", a, sizeof(a), NULL), -1);
	assert_int_equal(rootfs_ref_store_name("debian:12", a, 32, NULL), -1);
}

static void test_sha256_vectors(void **state)
{
	char h[65];
	hex_of("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(two, strlen(two), h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* A million 'a's, fed in uneven pieces. */
	struct sha256 s;
	rootfs_sha256_init(&s);
	char a[997];
	memset(a, 'a', sizeof(a));
	size_t left = 1000000;
	for (size_t step = 1; left; step = step * 7 % 997 + 1) {
		size_t n = step < left ? step : left;
		rootfs_sha256_update(&s, a, n);
		left -= n;
	}
	rootfs_sha256_final_hex(&s, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* The SHA extensions' code (where the CPU has them) and the portable
 * code agree on every length around the block size and on a large
 * buffer, fed whole and in uneven pieces. */
static void test_sha256_paths_agree(void **state)
{
	(void)state;
	size_t big = 1 << 20;
	unsigned char *buf = malloc(big);
	assert_non_null(buf);
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < big; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		buf[i] = (unsigned char)x;
	}
	char want[65], got[65];
	for (size_t n = 0; n <= 300; n++) {
		rootfs_sha256_portable_hex(buf, n, want);
		rootfs_sha256_hex(buf, n, got);
		assert_string_equal(got, want);
	}
	rootfs_sha256_portable_hex(buf, big, want);
	struct sha256 s;
	rootfs_sha256_init(&s);
	for (size_t off = 0, step = 1; off < big; off += step, step = step * 13 % 4099 + 1)
		rootfs_sha256_update(&s, buf + off, step < big - off ? step : big - off);
	rootfs_sha256_final_hex(&s, got);
	assert_string_equal(got, want);
	free(buf);
}

/* RFC 4231's cases 1, 2 and 6 (a key longer than a block) */
static void test_hmac_sha256_vectors(void **state)
{
	static const struct {
		unsigned char key_byte;
		size_t key_len;
		const char *key, *msg, *want;
	} cases[] = {
		{0x0b, 20, NULL, "Hi There",
		 "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{0, 4, "Jefe", "what do ya want for nothing?",
		 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{0xaa, 131, NULL, "Test Using Larger Than Block-Size Key - Hash Key First",
		 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char key[131];
		if (cases[i].key)
			memcpy(key, cases[i].key, cases[i].key_len);
		else
			memset(key, cases[i].key_byte, cases[i].key_len);
		uint8_t mac[32];
		rootfs_hmac_sha256(key, cases[i].key_len, cases[i].msg, strlen(cases[i].msg), mac);
		char hex[65];
		for (int k = 0; k < 32; k++)
			snprintf(hex + 2 * k, 3, "%02x", mac[k]);
		assert_string_equal(hex, cases[i].want);
	}
	(void)state;
}

/* ---- tar ---- */

static void octal(char *f, size_t len, uint64_t v)
{
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)len - 1, (unsigned long long)v);
	memcpy(f, tmp, len - 1);
	f[len - 1] = '\0';
}

static void header(unsigned char *h, const char *name, char type, uint64_t size)
{
	memset(h, 0, 512);
	memcpy(h, name, strnlen(name, 100));
	octal((char *)h + 100, 8, 0644);
	octal((char *)h + 108, 8, 1000);
	octal((char *)h + 116, 8, 1000);
	octal((char *)h + 124, 12, size);
	octal((char *)h + 136, 12, 1700000000);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

struct buf {
	unsigned char *p;
	size_t len;
};

static void put(struct buf *b, const void *data, size_t len)
{
	b->p = realloc(b->p, b->len + len + 512);
	memcpy(b->p + b->len, data, len);
	b->len += len;
	size_t pad = (512 - len % 512) % 512;
	memset(b->p + b->len, 0, pad);
	b->len += pad;
}

static void entry(struct buf *b, const char *name, char type, const char *data)
{
	unsigned char h[512];
	size_t n = data ? strlen(data) : 0;
	header(h, name, type, n);
	put(b, h, 512);
	if (n)
		put(b, data, n);
}

static int memfd_of(const struct buf *b)
{
	int fd = memfd_create("tar", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b->p, b->len), (ssize_t)b->len);
	return fd;
}

static void test_tar_reader(void **state)
{
	struct buf b = {0};
	entry(&b, "./etc/", '5', NULL);
	entry(&b, "etc/hello", '0', "hello world\n");
	/* A pax path longer than the 100-byte name field. */
	char longname[300];
	memset(longname, 'x', 250);
	memcpy(longname, "deep/", 5);
	longname[250] = '\0';
	char rec[400];
	int n = snprintf(rec, sizeof(rec), "%d path=%s\n", 0, longname);
	int len = n;
	for (;;) { /* the record's length counts its own digits */
		int m = snprintf(rec, sizeof(rec), "%d path=%s\n", len, longname);
		if (m == len)
			break;
		len = m;
	}
	entry(&b, "PaxHeaders/x", 'x', rec);
	entry(&b, "short-name", '0', "pax\n");
	/* A GNU long link name. */
	entry(&b, "././@LongLink", 'K', "/a/very/long/target");
	entry(&b, "link", '2', NULL);
	unsigned char zero[1024] = {0};
	put(&b, zero, sizeof(zero));

	int fd = memfd_of(&b);
	struct stream s;
	struct sc_err err = {0};
	assert_int_equal(rootfs_stream_open(&s, fd, 0, UINT64_MAX, 0, &err), 0);
	struct tar_reader t;
	rootfs_tar_init(&t, &s);
	struct tar_entry *e = malloc(sizeof(*e));
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1);
	assert_string_equal(e->path, "./etc/");
	assert_int_equal(e->type, TAR_DIR);
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1);
	assert_string_equal(e->path, "etc/hello");
	assert_int_equal(e->size, 12);
	assert_int_equal(e->uid, 1000);
	char data[64] = {0};
	assert_int_equal(rootfs_tar_read(&t, data, sizeof(data), &err), 12);
	assert_string_equal(data, "hello world\n");
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1);
	assert_string_equal(e->path, longname);
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1); /* content of the pax entry skipped */
	assert_string_equal(e->path, "link");
	assert_int_equal(e->type, TAR_SYMLINK);
	assert_string_equal(e->link, "/a/very/long/target");
	assert_int_equal(rootfs_tar_next(&t, e, &err), 0);
	rootfs_stream_close(&s);
	close(fd);

	/* A corrupted checksum is an error, not garbage. */
	b.p[148] ^= 1;
	fd = memfd_of(&b);
	assert_int_equal(rootfs_stream_open(&s, fd, 0, UINT64_MAX, 0, &err), 0);
	rootfs_tar_init(&t, &s);
	assert_int_equal(rootfs_tar_next(&t, e, &err), -1);
	assert_non_null(strstr(err.msg, "checksum"));
	rootfs_stream_close(&s);
	close(fd);
	b.p[148] ^= 1;

	/* Truncated in the middle of an entry. */
	struct buf cut = {.p = malloc(b.len), .len = 512 + 512 + 6};
	memcpy(cut.p, b.p, cut.len);
	fd = memfd_of(&cut);
	assert_int_equal(rootfs_stream_open(&s, fd, 0, UINT64_MAX, 0, &err), 0);
	rootfs_tar_init(&t, &s);
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1);
	assert_int_equal(rootfs_tar_next(&t, e, &err), 1);
	assert_true(rootfs_tar_read(&t, data, sizeof(data), &err) <= 6);
	assert_int_equal(rootfs_tar_next(&t, e, &err), -1);
	rootfs_stream_close(&s);
	close(fd);

	/* The expansion limit stops a stream. */
	fd = memfd_of(&b);
	assert_int_equal(rootfs_stream_open(&s, fd, 0, UINT64_MAX, 1024, &err), 0);
	rootfs_tar_init(&t, &s);
	int rc;
	while ((rc = rootfs_tar_next(&t, e, &err)) > 0)
		;
	assert_int_equal(rc, -1);
	assert_true(s.over_limit);
	rootfs_stream_close(&s);
	close(fd);
	free(e);
	free(cut.p);
	free(b.p);
}

/* ---- references, digests, indexes, chain ids ---- */

static void test_refs(void **state)
{
	char host[256], repo[256], tag[130], digest[80];
	assert_int_equal(parse_ref_for_test("alpine", host, repo, tag, digest), 0);
	assert_string_equal(host, "registry-1.docker.io");
	assert_string_equal(repo, "library/alpine");
	assert_string_equal(tag, "latest");
	assert_int_equal(parse_ref_for_test("127.0.0.1:5000/test/two:1", host, repo, tag, digest), 0);
	assert_string_equal(host, "127.0.0.1:5000");
	assert_string_equal(repo, "test/two");
	assert_string_equal(tag, "1");
	assert_int_equal(parse_ref_for_test("docker.io/library/debian:bookworm", host, repo, tag, digest), 0);
	assert_string_equal(host, "registry-1.docker.io");
	assert_string_equal(repo, "library/debian");
	assert_int_equal(parse_ref_for_test("localhost/a/b", host, repo, tag, digest), 0);
	assert_string_equal(host, "localhost");
	char ref[200];
	snprintf(ref, sizeof(ref), "ghcr.io/o/r@sha256:%064d", 0);
	assert_int_equal(parse_ref_for_test(ref, host, repo, tag, digest), 0);
	assert_string_equal(repo, "o/r");
	assert_int_equal(strlen(digest), 71);
	assert_int_equal(parse_ref_for_test("Upper/case", host, repo, tag, digest), -1);
	assert_int_equal(parse_ref_for_test("a//b", host, repo, tag, digest), -1);
	assert_int_equal(parse_ref_for_test("a/b:bad tag", host, repo, tag, digest), -1);
	assert_int_equal(parse_ref_for_test("a/b@sha256:abc", host, repo, tag, digest), -1);
	assert_int_equal(parse_ref_for_test("a/../b", host, repo, tag, digest), -1);
}

static void test_oci(void **state)
{
	char d[80];
	snprintf(d, sizeof(d), "sha256:%064d", 1);
	assert_true(rootfs_digest_valid(d));
	assert_false(rootfs_digest_valid("sha256:ABC"));
	assert_false(rootfs_digest_valid("sha512:00"));

	const char *index =
		"{\"manifests\":["
		"{\"digest\":\"sha256:1111111111111111111111111111111111111111111111111111111111111111\","
		"\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
		"{\"digest\":\"sha256:2222222222222222222222222222222222222222222222222222222222222222\","
		"\"size\":20,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
	struct oci_desc desc;
	struct sc_err err = {0};
	assert_int_equal(rootfs_oci_pick_from_index(index, strlen(index), "linux/amd64", &desc, &err), 0);
	assert_int_equal(desc.size, 20);
	assert_int_equal(rootfs_oci_pick_from_index(index, strlen(index), "linux/s390x", &desc, &err), -1);
	assert_non_null(strstr(err.msg, "linux/s390x"));

	char ids[2][OCI_DIGEST_LEN], id[80], want[80], hex[65];
	snprintf(ids[0], sizeof(ids[0]), "sha256:%064d", 1);
	snprintf(ids[1], sizeof(ids[1]), "sha256:%064d", 2);
	rootfs_oci_chain_id(ids, 1, id, sizeof(id));
	snprintf(want, sizeof(want), "sha256-%064d", 1);
	assert_string_equal(id, want);
	char joined[200];
	snprintf(joined, sizeof(joined), "%s %s", ids[0], ids[1]);
	rootfs_sha256_hex(joined, strlen(joined), hex);
	rootfs_oci_chain_id(ids, 2, id, sizeof(id));
	snprintf(want, sizeof(want), "sha256-%s", hex);
	assert_string_equal(id, want);
	assert_true(rootfs_layer_id_valid(id));
	assert_false(rootfs_layer_id_valid("sha256-../../etc"));

	const char *cfg = "{\"config\":{\"Env\":[\"A=1\",\"bad\",\"B=2\"],\"WorkingDir\":\"/w\","
			  "\"Cmd\":[\"sh\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:"
			  "1111111111111111111111111111111111111111111111111111111111111111\"]}}";
	struct oci_config c;
	assert_int_equal(rootfs_oci_parse_config(cfg, strlen(cfg), &c, &err), 0);
	assert_string_equal(c.env[0], "A=1");
	assert_string_equal(c.env[1], "B=2"); /* not KEY=VALUE: dropped */
	assert_null(c.env[2]);
	assert_string_equal(c.workdir, "/w");
	assert_int_equal(c.ndiff_ids, 1);
	rootfs_oci_config_free(&c);
}

/* Write text to a new temporary file; its path into path. */
static void temp_file(char *path, size_t size, const char *text)
{
	snprintf(path, size, "/tmp/sc-creds-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_creds(void **state)
{
	(void)state;
	struct sc_err err = {0};
	struct registry_creds c;
	char path[64];
	/* "alice:pw" in base64; Docker Hub's key names registry-1.docker.io */
	temp_file(path, sizeof(path), "{\"auths\": {\"https://index.docker.io/v1/\": "
		  "{\"auth\": \"YWxpY2U6cHc=\"}, \"ghcr.io\": {\"username\": \"bob\", "
		  "\"password\": \"x\"}, \"q.io/team\": {\"identitytoken\": \"tok\"}}}");
	assert_int_equal(rootfs_creds_find(path, "registry-1.docker.io", &c, &err), 1);
	assert_string_equal(c.basic, "YWxpY2U6cHc=");
	assert_string_equal(c.source, path);
	assert_int_equal(rootfs_creds_find(path, "ghcr.io", &c, &err), 1);
	assert_string_equal(c.basic, "Ym9iOng="); /* bob:x */
	assert_int_equal(rootfs_creds_find(path, "q.io", &c, &err), 1);
	assert_string_equal(c.identity_token, "tok");
	assert_string_equal(c.basic, "");
	assert_int_equal(rootfs_creds_find(path, "ghcr.io.evil", &c, &err), 0);
	assert_int_equal(rootfs_creds_find(path, "evil.ghcr.io", &c, &err), 0);
	unlink(path);

	/* an entry a credential helper keeps: none, with a note */
	temp_file(path, sizeof(path), "{\"auths\": {\"ghcr.io\": {}}, \"credsStore\": \"desktop\"}");
	assert_int_equal(rootfs_creds_find(path, "ghcr.io", &c, &err), 0);
	assert_non_null(strstr(c.note, "credsStore"));
	unlink(path);

	/* malformed: not base64, no ':' in it, no user, not JSON; the secret
	 * is never in the message */
	const char *bad[] = {"{\"auths\": {\"h\": {\"auth\": \"s3cret!\"}}}",
			     "{\"auths\": {\"h\": {\"auth\": \"czNjcmV0\"}}}",
			     "{\"auths\": {\"h\": {\"auth\": \"OnMzY3JldA==\"}}}", "s3cret"};
	for (size_t i = 0; i < 4; i++) {
		temp_file(path, sizeof(path), bad[i]);
		assert_int_equal(rootfs_creds_find(path, "h", &c, &err), -1);
		assert_null(strstr(err.msg, "s3cret"));
		assert_null(strstr(err.msg, "czNjcmV0"));
		unlink(path);
	}
	assert_int_equal(rootfs_creds_find("/nonexistent/creds.json", "h", &c, &err), -1);
}

/* An upload's Location, as registries give it, to the URL of its PUT. */
static void test_push_upload_url(void **state)
{
	(void)state;
	const char *b = "https://r.example:5000", *hex = "ab12";
	char u[512];
	bool other;
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "/v2/t/x/blobs/uploads/u1?_state=S%3D", hex, u,
						sizeof(u), &other), 0);
	assert_string_equal(u, "https://r.example:5000/v2/t/x/blobs/uploads/u1?_state=S%3D&digest=sha256%3Aab12");
	assert_false(other);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "https://r.example:5000/v2/t/x/blobs/uploads/u2",
						hex, u, sizeof(u), &other), 0);
	assert_string_equal(u, "https://r.example:5000/v2/t/x/blobs/uploads/u2?digest=sha256%3Aab12");
	assert_false(other);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "u3?a=1", hex, u, sizeof(u), &other), 0);
	assert_string_equal(u, "https://r.example:5000/v2/t/x/blobs/uploads/u3?a=1&digest=sha256%3Aab12");
	/* another host (or a port that only starts the same) gets no credentials */
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "https://store.example/up?sig=1", hex, u,
						sizeof(u), &other), 0);
	assert_true(other);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "https://r.example:50001/up", hex, u, sizeof(u),
						&other), 0);
	assert_true(other);
	/* unusable: empty, blanks, control characters, a fragment, too long */
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "", hex, u, sizeof(u), &other), -1);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "/a b", hex, u, sizeof(u), &other), -1);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "/a\r\nX: y", hex, u, sizeof(u), &other), -1);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "/a#f", hex, u, sizeof(u), &other), -1);
	assert_int_equal(rootfs_push_upload_url(b, "t/x", "/v2/t/x/blobs/uploads/u1", hex, u, 40, &other), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_sha256_paths_agree),
		cmocka_unit_test(test_hmac_sha256_vectors),
		cmocka_unit_test(test_tar_reader),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_ref_store_names),
		cmocka_unit_test(test_oci),
		cmocka_unit_test(test_creds),
		cmocka_unit_test(test_push_upload_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
