/* Byte streams for archives: a region of a file (or a pipe), hashed as it
 * is read, transparently gunzipped or zstd-decompressed, with a limit on
 * what it may expand to. */
#include <string.h>

#include "internal.h"

#define ZBUF_SIZE (128 * 1024)

int rootfs_stream_open(struct stream *s, int fd, uint64_t offset, uint64_t len, uint64_t max_data,
		struct sc_err *err)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->pos = offset;
	s->raw_left = len;
	s->max_data = max_data;
	s->seekable = lseek(fd, 0, SEEK_CUR) >= 0;
	if (!s->seekable && offset)
		return sc_fail(err, ESPIPE, "cannot seek in the archive");
	rootfs_sha256_init(&s->raw_hash);
	rootfs_sha256_init(&s->data_hash);
	return 0;
}

#define RBUF_SIZE (256 * 1024)

/* One read(2) or pread(2) of up to len raw bytes into dst. */
static ssize_t fill(struct stream *s, void *dst, size_t len, struct sc_err *err)
{
	if (s->raw_left < len)
		len = (size_t)s->raw_left;
	if (len == 0)
		return 0;
	ssize_t n;
	do
		n = s->seekable ? pread(s->fd, dst, len, (off_t)s->pos) : read(s->fd, dst, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sc_fail(err, errno, "read the archive");
	if (n == 0 && s->raw_left != UINT64_MAX)
		return sc_fail(err, 0, "the archive is truncated");
	s->pos += (uint64_t)n;
	if (s->raw_left != UINT64_MAX)
		s->raw_left -= (uint64_t)n;
	return n;
}

/* Raw bytes through a read-ahead buffer (archives are read in 512-byte
 * headers; one syscall each would be slow). */
static ssize_t raw_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	ssize_t n;
	if (s->roff == s->rlen && len >= RBUF_SIZE) {
		n = fill(s, buf, len, err);
	} else {
		if (s->roff == s->rlen) {
			if (!s->rbuf && !(s->rbuf = malloc(RBUF_SIZE)))
				return sc_fail(err, ENOMEM, "read buffer");
			n = fill(s, s->rbuf, RBUF_SIZE, err);
			if (n <= 0)
				return n;
			s->rlen = (size_t)n;
			s->roff = 0;
		}
		n = (ssize_t)(s->rlen - s->roff < len ? s->rlen - s->roff : len);
		memcpy(buf, s->rbuf + s->roff, (size_t)n);
		s->roff += (size_t)n;
	}
	if (n > 0)
		rootfs_sha256_update(&s->raw_hash, buf, (size_t)n);
	return n;
}

/* The window a zstd frame may ask for: 2^27 bytes, zstd's own default
 * limit (a layer made with --long=31 is refused rather than given 2 GiB). */
#define ZSTD_WINDOW_LOG_MAX 27

static int zstd_start(struct stream *s, struct sc_err *err)
{
	s->zstd = true;
	s->zbuf = malloc(ZBUF_SIZE);
	s->zs = ZSTD_createDStream();
	if (!s->zbuf || !s->zs)
		return sc_fail(err, ENOMEM, "zstd buffer");
	if (ZSTD_isError(ZSTD_DCtx_setParameter(s->zs, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX)))
		return sc_fail(err, 0, "cannot start zstd decompression");
	memcpy(s->zbuf, s->peek, s->peek_len);
	s->zs_in = (ZSTD_inBuffer){.src = s->zbuf, .size = s->peek_len, .pos = 0};
	s->peek_off = s->peek_len;
	return 0;
}

/* Fill peek[] with the first bytes to recognise the compression. */
static int sniff(struct stream *s, struct sc_err *err)
{
	s->peeked = true;
	while (s->peek_len < sizeof(s->peek)) {
		ssize_t n = raw_read(s, s->peek + s->peek_len, sizeof(s->peek) - s->peek_len, err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		s->peek_len += (size_t)n;
	}
	static const uint8_t zstd[4] = {0x28, 0xb5, 0x2f, 0xfd};
	if (s->peek_len == 4 && !memcmp(s->peek, zstd, 4))
		return zstd_start(s, err);
	if (s->peek_len >= 2 && s->peek[0] == 0x1f && s->peek[1] == 0x8b) {
		s->gzip = true;
		s->zbuf = malloc(ZBUF_SIZE);
		if (!s->zbuf)
			return sc_fail(err, ENOMEM, "gzip buffer");
		/* 16 + MAX_WBITS: gzip framing only. */
		if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK)
			return sc_fail(err, 0, "cannot start gzip decompression");
		s->z_ready = true;
		memcpy(s->zbuf, s->peek, s->peek_len);
		s->z.next_in = s->zbuf;
		s->z.avail_in = (uInt)s->peek_len;
		s->peek_off = s->peek_len;
	}
	return 0;
}

/* Raw bytes, first from peek[] (uncompressed streams only). */
static ssize_t plain_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	if (s->peek_off < s->peek_len) {
		size_t n = s->peek_len - s->peek_off;
		if (n > len)
			n = len;
		memcpy(buf, s->peek + s->peek_off, n);
		s->peek_off += n;
		return (ssize_t)n;
	}
	return raw_read(s, buf, len, err);
}

static ssize_t gzip_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	s->z.next_out = buf;
	s->z.avail_out = (uInt)len;
	while (s->z.avail_out == len && !s->z_end) {
		if (s->z.avail_in == 0) {
			ssize_t n = raw_read(s, s->zbuf, ZBUF_SIZE, err);
			if (n < 0)
				return -1;
			if (n == 0)
				return sc_fail(err, 0, "the gzip stream is truncated");
			s->z.next_in = s->zbuf;
			s->z.avail_in = (uInt)n;
		}
		int rc = inflate(&s->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			/* Concatenated gzip members continue the stream. */
			if (s->z.avail_in == 0) {
				ssize_t n = raw_read(s, s->zbuf, ZBUF_SIZE, err);
				if (n < 0)
					return -1;
				s->z.next_in = s->zbuf;
				s->z.avail_in = (uInt)n;
			}
			if (s->z.avail_in == 0)
				s->z_end = true;
			else if (inflateReset(&s->z) != Z_OK)
				return sc_fail(err, 0, "gzip: cannot restart");
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			return sc_fail(err, 0, "gzip: %s", s->z.msg ? s->z.msg : "corrupt data");
		}
	}
	return (ssize_t)(len - s->z.avail_out);
}

/* Refill zstd's input from the raw stream; 0 at its end. */
static ssize_t zstd_refill(struct stream *s, struct sc_err *err)
{
	ssize_t n = raw_read(s, s->zbuf, ZBUF_SIZE, err);
	if (n > 0)
		s->zs_in = (ZSTD_inBuffer){.src = s->zbuf, .size = (size_t)n, .pos = 0};
	return n;
}

/* Frames follow one another until the raw bytes end; the stream must not
 * end inside a frame (hint != 0 after a call: the frame is unfinished). */
static ssize_t zstd_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	ZSTD_outBuffer out = {.dst = buf, .size = len, .pos = 0};
	while (out.pos == 0 && !s->zs_end) {
		/* A full output buffer may leave decoded bytes inside zstd:
		 * they come out before more input is needed. */
		if (s->zs_in.pos == s->zs_in.size && !s->zs_pending) {
			ssize_t n = zstd_refill(s, err);
			if (n < 0)
				return -1;
			if (n == 0) {
				if (s->zs_frame_open)
					return sc_fail(err, 0, "the zstd stream is truncated");
				s->zs_end = true;
				break;
			}
		}
		size_t hint = ZSTD_decompressStream(s->zs, &out, &s->zs_in);
		if (ZSTD_isError(hint)) {
			if (ZSTD_getErrorCode(hint) == ZSTD_error_frameParameter_windowTooLarge)
				return sc_fail(err, 0, "zstd: the layer needs a window over %u MiB "
					       "(compressed with --long?)", (1u << ZSTD_WINDOW_LOG_MAX) >> 20);
			return sc_fail(err, 0, "zstd: %s", ZSTD_getErrorName(hint));
		}
		s->zs_frame_open = hint != 0;
		s->zs_pending = out.pos == out.size;
	}
	return (ssize_t)out.pos;
}

static ssize_t decoded_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	if (s->gzip)
		return gzip_read(s, buf, len, err);
	if (s->zstd)
		return zstd_read(s, buf, len, err);
	return plain_read(s, buf, len, err);
}

ssize_t rootfs_stream_read(struct stream *s, void *buf, size_t len, struct sc_err *err)
{
	if (!s->peeked && sniff(s, err) < 0)
		return -1;
	ssize_t n = decoded_read(s, buf, len, err);
	if (n <= 0)
		return n;
	s->data_bytes += (uint64_t)n;
	if (s->max_data && s->data_bytes > s->max_data) {
		s->over_limit = true;
		return sc_fail(err, 0, "the archive unpacks to more than %llu bytes (the --max-size limit)",
			       (unsigned long long)s->max_data);
	}
	rootfs_sha256_update(&s->data_hash, buf, (size_t)n);
	return n;
}

/* Where skipped bytes go: per call, so that threads share nothing. */
#define SINK_SIZE (64 * 1024)

int rootfs_stream_skip(struct stream *s, uint64_t len, struct sc_err *err)
{
	if (s->fast_skip && s->seekable && s->peeked && !s->gzip && !s->zstd && s->peek_off == s->peek_len &&
	    s->raw_left == UINT64_MAX) {
		size_t buffered = s->rlen - s->roff;
		size_t from_buf = len < buffered ? (size_t)len : buffered;
		s->roff += from_buf;
		s->pos += len - from_buf;
		s->data_bytes += len;
		return 0;
	}
	_cleanup_free_ uint8_t *sink = len > 0 ? malloc(SINK_SIZE) : NULL;
	if (len > 0 && !sink)
		return sc_fail(err, ENOMEM, "skip in the archive");
	while (len > 0) {
		ssize_t n = rootfs_stream_read(s, sink, len < SINK_SIZE ? (size_t)len : SINK_SIZE, err);
		if (n < 0)
			return -1;
		if (n == 0)
			return sc_fail(err, 0, "the archive is truncated");
		len -= (uint64_t)n;
	}
	return 0;
}

int rootfs_stream_drain(struct stream *s, struct sc_err *err)
{
	_cleanup_free_ uint8_t *sink = malloc(SINK_SIZE);
	if (!sink)
		return sc_fail(err, ENOMEM, "read the archive");
	ssize_t n;
	while ((n = rootfs_stream_read(s, sink, SINK_SIZE, err)) > 0)
		;
	return n < 0 ? -1 : 0;
}

void rootfs_stream_close(struct stream *s)
{
	if (s->z_ready)
		inflateEnd(&s->z);
	ZSTD_freeDStream(s->zs);
	s->zs = NULL;
	s->zstd = false;
	free(s->zbuf);
	s->zbuf = NULL;
	free(s->rbuf);
	s->rbuf = NULL;
	s->rlen = s->roff = 0;
	s->z_ready = false;
}
