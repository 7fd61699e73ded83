/* Decoding a batch of N5 or zarr chunks in native code: each chunk's stored bytes decoded
 * (gzip, zlib, zstd or raw), every checksum its stream carries verified, and its part copied
 * into the output array through strides (a byte swap on the way for big-endian data), with
 * no Python between the chunks and without the interpreter lock (ctypes releases it).
 *
 * The caller reads the stored bytes (its own checks on the files stay in Python) and passes
 * one job per chunk.  The libraries come as function pointers (libdeflate, libzstd as
 * Python's ctypes loaded them), so building needs no headers; a library that is absent turns
 * off its codec only.
 *
 * A chunk is decoded into scratch memory first and copied only once it decoded to exactly the
 * bytes it must hold with every check passed: a failed chunk leaves the output untouched and
 * its status non-zero, and the caller decodes it again on its Python path, which words the
 * error (or, for a stream this file does not take, such as a gzip header with its own CRC,
 * decodes it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*new_fn)(void);
typedef void (*free_fn)(void *);
/* libdeflate_{gzip,zlib}_decompress_ex */
typedef int (*inflate_fn)(void *d, const void *in, size_t in_n, void *out, size_t out_avail,
                          size_t *in_used, size_t *out_made);
typedef size_t (*zstd_free_fn)(void *);
typedef size_t (*zstd_decompress_fn)(void *ctx, void *dst, size_t cap, const void *src,
                                     size_t n);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef unsigned long long (*zstd_content_fn)(const void *src, size_t n);
typedef size_t (*zstd_frame_fn)(const void *src, size_t n);

/* The libraries' functions (any may be null: that codec is refused). */
typedef struct {
    new_fn deflate_new;
    free_fn deflate_free;
    inflate_fn gzip;
    inflate_fn zlib;
    new_fn zstd_new;
    zstd_free_fn zstd_free;
    zstd_decompress_fn zstd;
    zstd_is_error_fn zstd_is_error;
    zstd_content_fn zstd_content;
    zstd_frame_fn zstd_frame;
} zk_codecs;

enum {
    ZK_RAW = 0,
    ZK_GZIP_MEMBERS = 1, /* N5: gzip members one after another, or a zlib stream (by magic) */
    ZK_GZIP = 2,         /* one gzip member */
    ZK_ZLIB = 3,         /* one zlib stream */
    ZK_ZSTD = 4          /* one zstd frame, nothing after it */
};

/* One chunk: its stored bytes, codec, decoded size, and the box copied out of it.  The copy
 * walks four axes, the last innermost: element (i0, i1, i2, i3) of the box is read at
 * src_off + sum(i * src_stride) bytes into the decoded chunk and written at
 * dst + sum(i * dst_stride). */
typedef struct {
    const char *src;
    int64_t src_len;
    int64_t codec;
    int64_t expected;
    char *dst;
    int64_t src_off;
    int64_t count[4];
    int64_t src_stride[4];
    int64_t dst_stride[4];
} zk_job;

enum { ZK_OK = 0, ZK_FAILED = 1, ZK_REFUSED = 2, ZK_MEMORY = 3 };

typedef struct {
    void *deflate;
    void *zstd;
} contexts;

/* libdeflate's result codes: 0 success, 1 bad data (a checksum too), 2 short, 3 no room. */
static int inflate_members(const zk_codecs *c, contexts *x, const zk_job *j, char *out) {
    const unsigned char *s = (const unsigned char *)j->src;
    size_t n = (size_t)j->src_len, used = 0, made = 0, total = 0;
    int gzip = j->codec == ZK_GZIP || (j->codec == ZK_GZIP_MEMBERS && n >= 2 && s[0] == 0x1f
                                        && s[1] == 0x8b);
    inflate_fn fn = gzip ? c->gzip : c->zlib;
    if (!fn || !c->deflate_new) return ZK_REFUSED;
    if (!x->deflate && !(x->deflate = c->deflate_new())) return ZK_MEMORY;
    size_t at = 0;
    for (;;) {
        /* A header CRC (FHCRC) is checked by zlib, not by libdeflate: left to Python. */
        if (gzip && (n - at < 4 || (s[at + 3] & 0x02))) return ZK_REFUSED;
        int r = fn(x->deflate, s + at, n - at, out + total, (size_t)j->expected - total, &used,
                   &made);
        if (r != 0) return ZK_FAILED;
        total += made;
        at += used;
        /* More members follow only in N5's gzip; anything else after the stream is ignored
         * (as zlib's decompressobj leaves it unused). */
        if (j->codec != ZK_GZIP_MEMBERS || !gzip || n - at < 2 || s[at] != 0x1f
            || s[at + 1] != 0x8b)
            break;
        if (total == (size_t)j->expected) return ZK_FAILED; /* a member past the chunk's size */
    }
    return total == (size_t)j->expected ? ZK_OK : ZK_FAILED;
}

static int unzstd(const zk_codecs *c, contexts *x, const zk_job *j, char *out) {
    if (!c->zstd || !c->zstd_new || !c->zstd_is_error || !c->zstd_content || !c->zstd_frame)
        return ZK_REFUSED;
    size_t n = (size_t)j->src_len;
    size_t frame = c->zstd_frame(j->src, n);
    if (c->zstd_is_error(frame) || frame != n) return ZK_FAILED;
    unsigned long long declared = c->zstd_content(j->src, n);
    /* (0ULL - 1): unknown size, a streaming writer's frame; (0ULL - 2): an error. */
    if (declared != (0ULL - 1) && declared != (unsigned long long)j->expected) return ZK_FAILED;
    if (!x->zstd && !(x->zstd = c->zstd_new())) return ZK_MEMORY;
    size_t got = c->zstd(x->zstd, out, (size_t)j->expected, j->src, n);
    if (c->zstd_is_error(got) || got != (size_t)j->expected) return ZK_FAILED;
    return ZK_OK;
}

static void swap_into(char *d, const char *s, int64_t size) {
    for (int64_t b = 0; b < size; b++) d[b] = s[size - 1 - b];
}

/* Copy the job's box out of the decoded chunk `data`. */
static void place(const zk_job *j, const char *data, int64_t itemsize, int64_t swap) {
    const int64_t *n = j->count, *ss = j->src_stride, *ds = j->dst_stride;
    int contiguous = !swap && ss[3] == itemsize && ds[3] == itemsize;
    for (int64_t a = 0; a < n[0]; a++)
        for (int64_t b = 0; b < n[1]; b++)
            for (int64_t c = 0; c < n[2]; c++) {
                const char *s = data + j->src_off + a * ss[0] + b * ss[1] + c * ss[2];
                char *d = j->dst + a * ds[0] + b * ds[1] + c * ds[2];
                if (contiguous) {
                    memcpy(d, s, (size_t)(n[3] * itemsize));
                } else if (swap) {
                    for (int64_t e = 0; e < n[3]; e++)
                        swap_into(d + e * ds[3], s + e * ss[3], itemsize);
                } else {
                    for (int64_t e = 0; e < n[3]; e++)
                        memcpy(d + e * ds[3], s + e * ss[3], (size_t)itemsize);
                }
            }
}

/* Decode and place `n` jobs in order; status[k] says how job k went (ZK_OK: its box is in
 * the output).  `itemsize`: bytes per element; `swap`: reverse each element's bytes.
 * Returns the number of jobs not ZK_OK. */
int64_t zk_decode(const zk_codecs *codecs, const zk_job *jobs, int64_t n, int64_t itemsize,
                  int64_t swap, int64_t *status) {
    int64_t room = 0, failed = 0;
    for (int64_t k = 0; k < n; k++)
        if (jobs[k].codec != ZK_RAW && jobs[k].expected > room) room = jobs[k].expected;
    char *scratch = room ? malloc((size_t)room) : NULL;
    contexts x = {NULL, NULL};
    for (int64_t k = 0; k < n; k++) {
        const zk_job *j = &jobs[k];
        int r;
        if (j->expected < 0 || j->src_len < 0) {
            r = ZK_REFUSED;
        } else if (j->codec == ZK_RAW) {
            r = j->src_len == j->expected ? ZK_OK : ZK_FAILED;
        } else if (!scratch) {
            r = ZK_MEMORY;
        } else if (j->codec == ZK_ZSTD) {
            r = unzstd(codecs, &x, j, scratch);
        } else if (j->codec == ZK_GZIP_MEMBERS || j->codec == ZK_GZIP || j->codec == ZK_ZLIB) {
            r = inflate_members(codecs, &x, j, scratch);
        } else {
            r = ZK_REFUSED;
        }
        if (r == ZK_OK) place(j, j->codec == ZK_RAW ? j->src : scratch, itemsize, swap);
        else failed++;
        status[k] = r;
    }
    if (x.deflate) codecs->deflate_free(x.deflate);
    if (x.zstd) codecs->zstd_free(x.zstd);
    free(scratch);
    return failed;
}
