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

/* ---- N5 chunk files read, checked and decoded in one call ------------------------------
 *
 * Per chunk what the Python path does around the decode: the file's path made from the
 * dataset's folder and the chunk's grid position, the file opened and read whole as one
 * version (``read_file_whole``: fstat, a regular file, not modified within the racy window,
 * a wait for writes in progress, one pread of its size, fstat again with the same identity),
 * the N5 header parsed and checked against the dataset, then the chunk decoded whole and its
 * part of the box placed.  A raw chunk (no checksum to reach) is read in part instead: its
 * header, its size checked against the header's block, then the bytes its box needs.
 * Anything out of the ordinary (a file missing is the only one kept
 * here: ZK_ABSENT) is left to the Python path, which reads the file again and says what is
 * wrong: this code words no error, so the two paths cannot differ in what they raise.
 *
 * Several threads may call zk_n5_read on the same jobs at once: each takes the next job from
 * the shared counter ``next`` until none is left. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ZK_MAX_NDIM 32
enum { ZK_ABSENT = 4, ZK_UNREAD = 5 };

/* The dataset and the read, shared by every job (as ``chunks.N5Spec`` lays it out). */
typedef struct {
    const char *folder;          /* the dataset's folder with a separator after it */
    int64_t ndim;                /* N5 axes */
    int64_t block[ZK_MAX_NDIM];  /* blockSize */
    int64_t dims[ZK_MAX_NDIM];   /* dimensions */
    int64_t tail[ZK_MAX_NDIM];   /* grid positions of the axes past x, y, z */
    int64_t channel_axis;        /* -1: none */
    int64_t channels;            /* channels placed from each block (its first ones) */
    int64_t chunk[3];            /* the volume's chunk shape, x y z */
    int64_t codec, itemsize, swap;
    int64_t dst_stride[4];       /* c, z, y, x */
    int64_t racy_ns, coarse_ns;  /* the racy windows (handles.RACY_WINDOW_NS, COARSE_...) */
} zk_n5;

/* A job: unit (x y z), the output's address, the grid voxel it holds first (x y z), and the
 * box [lo, hi) of voxels wanted. */
enum { ZK_N5_FIELDS = 13 };

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t stat_ns(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* handles.racy_wait_ns == 0 */
static int settled(const zk_n5 *s, const struct stat *st) {
    int64_t m = stat_ns(&st->st_mtim), c = stat_ns(&st->st_ctim);
    int64_t newest = m > c ? m : c;
    int coarse = m % 1000000000 == 0 && c % 1000000000 == 0;
    int64_t window = coarse ? s->coarse_ns : s->racy_ns, now = now_ns();
    if (newest - now > window) return 1;
    return newest + window - now <= 0;
}

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size
           && stat_ns(&a->st_mtim) == stat_ns(&b->st_mtim)
           && stat_ns(&a->st_ctim) == stat_ns(&b->st_ctim);
}

/* Room for n bytes in *buf (grown as needed); 0 when there is no memory for it. */
static int reserve(char **buf, size_t *room, size_t n) {
    if (n <= *room) return 1;
    char *more = realloc(*buf, n);
    if (!more) return 0;
    *buf = more;
    *room = n;
    return 1;
}

/* n bytes at offset at of the file into dst; 1 when all of them came. */
static int read_at(int fd, char *dst, size_t n, size_t at) {
    size_t have = 0;
    while (have < n) {
        ssize_t r = pread(fd, dst + have, n - have, (off_t)(at + have));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        have += (size_t)r;
    }
    return 1;
}

/* The chunk file opened as one version of it (``read_file_whole``): a regular file, not
 * modified within the racy window, no write in progress.  Its descriptor, or -ZK_ABSENT /
 * -ZK_UNREAD; *a: its identity, checked again by ``same_file`` after the reads. */
static int open_settled(const zk_n5 *s, const char *path, struct stat *a) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return (errno == ENOENT || errno == ENOTDIR) ? -ZK_ABSENT : -ZK_UNREAD;
    if (fstat(fd, a) != 0 || !S_ISREG(a->st_mode) || !settled(s, a)) {
        close(fd);
        return -ZK_UNREAD;
    }
#ifdef SEEK_DATA
    lseek(fd, 0, SEEK_DATA); /* waits for a write in progress (handles.wait_for_writers) */
#endif
    return fd;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The longest N5 chunk header: mode, ndim, a size per axis, the varlength count. */
#define ZK_N5_HEAD_MAX (4 + 4 * ZK_MAX_NDIM + 4)

/* One chunk file, open as fd (size bytes), read and decoded: its status, and on ZK_OK the
 * job *j whose box is then placed from *data.  A compressed chunk is read whole and decoded
 * whole, so that every checksum its stream carries is checked.  A raw chunk carries none:
 * its size is checked against its header and only its header and the bytes the box needs
 * are read (an XY plane reads one slice of each chunk it cuts). */
static int n5_file(const zk_codecs *codecs, contexts *x, const zk_n5 *s, const int64_t *job,
                   const int64_t *pos, int fd, size_t size, char **buf, size_t *room,
                   char *scratch, zk_job *out, const char **data) {
    const int64_t *unit = job, *first = job + 4, *lo = job + 7, *hi = job + 10;
    int raw = s->codec == ZK_RAW;
    size_t n = raw && size > ZK_N5_HEAD_MAX ? ZK_N5_HEAD_MAX : size;
    if (!reserve(buf, room, n ? n : 1)) return ZK_MEMORY;
    if (!read_at(fd, *buf, n, 0)) return ZK_UNREAD;
    const unsigned char *h = (const unsigned char *)*buf;
    int64_t nd = s->ndim;
    /* header.parse and N5Volume.check_header: anything they would refuse is left to them */
    if (n < 4) return ZK_UNREAD;
    unsigned mode = (unsigned)h[0] << 8 | h[1], ndim = (unsigned)h[2] << 8 | h[3];
    if (mode > 1 || (int64_t)ndim != nd) return ZK_UNREAD;
    int64_t head = 4 + 4 * nd + (mode == 1 ? 4 : 0);
    if ((int64_t)n < head) return ZK_UNREAD;
    int64_t d[ZK_MAX_NDIM], count = 1;
    int clipped = 1, full = 1;
    for (int64_t i = 0; i < nd; i++) {
        d[i] = be32(h + 4 + 4 * i);
        int64_t c = s->dims[i] - pos[i] * s->block[i];
        if (c > s->block[i]) c = s->block[i];
        clipped &= d[i] == c;
        full &= d[i] == s->block[i];
        count *= d[i];
    }
    if (!clipped && !full) return ZK_UNREAD;
    if (mode == 1 && (int64_t)be32(h + 4 + 4 * nd) != count) return ZK_UNREAD;
    int64_t channels = s->channel_axis >= 0 ? d[s->channel_axis] : 1;
    if (channels < s->channels) return ZK_UNREAD;
    int64_t st[3] = {d[0], d[1], nd >= 3 ? d[2] : 1}, cnt[3], src_at = 0, dst_at = 0;
    int64_t isz = s->itemsize, step[3] = {isz, d[0] * isz, d[0] * st[1] * isz};
    int empty = 0;
    for (int i = 0; i < 3; i++) {
        int64_t g = unit[i] * s->chunk[i];
        int64_t a = g > lo[i] ? g : lo[i], b = g + s->chunk[i];
        if (hi[i] < b) b = hi[i];
        if (g + st[i] < b) b = g + st[i];
        cnt[i] = b - a;
        if (cnt[i] <= 0) empty = 1;
        src_at += (a - g) * step[i];
        dst_at += (a - first[i]) * s->dst_stride[3 - i];
    }
    zk_job j;
    j.src = NULL;
    j.src_len = 0;
    j.codec = s->codec;
    j.expected = count * isz;
    j.dst = (char *)(intptr_t)job[3] + dst_at;
    j.src_off = src_at;
    /* a box the stored block does not reach is still decoded: its checksums are checked */
    int64_t c4[4] = {s->channels, cnt[2], cnt[1], cnt[0]};
    int64_t s4[4] = {step[2] * st[2], step[2], step[1], step[0]};
    for (int i = 0; i < 4; i++) {
        j.count[i] = empty ? 0 : c4[i];
        j.src_stride[i] = s4[i];
        j.dst_stride[i] = s->dst_stride[i];
    }
    if (raw) {
        /* the payload holds exactly the block's elements (codecs.decompress's raw check) */
        if ((int64_t)size - head != j.expected) return ZK_FAILED;
        int64_t span = 0; /* from the box's first element to the end of its last */
        if (!empty) {
            for (int i = 0; i < 4; i++) span += (j.count[i] - 1) * j.src_stride[i];
            span += isz;
        }
        if (!reserve(buf, room, span ? (size_t)span : 1)) return ZK_MEMORY;
        if (!read_at(fd, *buf, (size_t)span, (size_t)(head + src_at))) return ZK_UNREAD;
        j.src_off = 0;
        *out = j;
        *data = *buf;
        return ZK_OK;
    }
    if (!reserve(buf, room, size ? size : 1)) return ZK_MEMORY;
    if (size > n && !read_at(fd, *buf + n, size - n, n)) return ZK_UNREAD;
    j.src = *buf + head;
    j.src_len = (int64_t)size - head;
    int r = j.codec == ZK_ZSTD ? unzstd(codecs, x, &j, scratch)
                               : inflate_members(codecs, x, &j, scratch);
    *out = j;
    *data = scratch;
    return r;
}

/* One chunk file: its path made, the file opened, read and placed as one version of it
 * (the same identity after the reads, else left to the Python path); its status. */
static int n5_one(const zk_codecs *codecs, contexts *x, const zk_n5 *s, const int64_t *job,
                  char **buf, size_t *room, char *scratch, char *path, size_t path_room) {
    int64_t nd = s->ndim, naxes = nd < 3 ? nd : 3, pos[ZK_MAX_NDIM];
    for (int64_t i = 0; i < nd; i++) pos[i] = i < naxes ? job[i] : s->tail[i];
    int w = snprintf(path, path_room, "%s", s->folder);
    for (int64_t i = 0; i < nd && w > 0 && (size_t)w < path_room; i++)
        w += snprintf(path + w, path_room - (size_t)w, i ? "/%lld" : "%lld",
                      (long long)pos[i]);
    if (w <= 0 || (size_t)w >= path_room) return ZK_UNREAD;
    struct stat a, b;
    int fd = open_settled(s, path, &a);
    if (fd < 0) return -fd;
    zk_job j;
    const char *data = NULL;
    int r = n5_file(codecs, x, s, job, pos, fd, (size_t)a.st_size, buf, room, scratch, &j,
                    &data);
    if (r == ZK_OK && !(fstat(fd, &b) == 0 && same_file(&a, &b))) r = ZK_UNREAD;
    close(fd);
    /* placed only once the file proved the same after the reads */
    if (r == ZK_OK) place(&j, data, s->itemsize, s->swap);
    return r;
}

/* Take jobs (``n`` rows of ZK_N5_FIELDS) from the shared counter ``next`` until none is left;
 * status[k] as for zk_decode, or ZK_ABSENT (no such file: its box untouched), ZK_UNREAD (left
 * to the Python path).  Returns the number of jobs this call took. */
int64_t zk_n5_read(const zk_codecs *codecs, const zk_n5 *s, const int64_t *jobs, int64_t n,
                   int64_t *next, int64_t *status) {
    int64_t room = s->itemsize, taken = 0;
    for (int64_t i = 0; i < s->ndim; i++) room *= s->block[i];
    if (s->ndim < 1 || s->ndim > ZK_MAX_NDIM) return 0;
    char *scratch = s->codec != ZK_RAW ? malloc((size_t)room) : NULL, *buf = NULL;
    size_t buf_room = 0, path_room = strlen(s->folder) + 21 * ZK_MAX_NDIM + 1;
    char *path = malloc(path_room);
    contexts x = {NULL, NULL};
    for (;;) {
        int64_t k = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
        if (k >= n) break;
        taken++;
        status[k] = (!path || (s->codec != ZK_RAW && !scratch))
                        ? ZK_MEMORY
                        : n5_one(codecs, &x, s, jobs + k * ZK_N5_FIELDS, &buf, &buf_room,
                                 scratch, path, path_room);
    }
    if (x.deflate) codecs->deflate_free(x.deflate);
    if (x.zstd) codecs->zstd_free(x.zstd);
    free(scratch);
    free(buf);
    free(path);
    return taken;
}

/* Ranges of one file read as one version of it (``store.read_file_ranges`` without the
 * Python per range): open, fstat, not modified within the racy window, a wait for writes in
 * progress, each range pread into ``buf`` one after another (got[k]: the bytes it gave,
 * fewer only at the end of the file), fstat again with the same identity, close.  ident:
 * the file's identity (device, inode, size, modification and change times) for the caller's
 * version check.  Returns ZK_OK, ZK_ABSENT (no such file) or ZK_UNREAD (anything else: the
 * caller reads on its Python path, which waits, retries and raises). */
int64_t zk_read_ranges(const char *path, const int64_t *ranges, int64_t n, char *buf,
                       int64_t *got, int64_t racy_ns, int64_t coarse_ns, int64_t *ident) {
    zk_n5 s;
    s.racy_ns = racy_ns;
    s.coarse_ns = coarse_ns;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return (errno == ENOENT || errno == ENOTDIR) ? ZK_ABSENT : ZK_UNREAD;
    struct stat a, b;
    int64_t r = ZK_UNREAD;
    if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode) || !settled(&s, &a)) goto done;
#ifdef SEEK_DATA
    lseek(fd, 0, SEEK_DATA);
#endif
    char *at = buf;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = ranges[2 * k], len = ranges[2 * k + 1], have = 0;
        if (off < 0 || len < 0) goto done;
        while (have < len) {
            ssize_t m = pread(fd, at + have, (size_t)(len - have), (off_t)(off + have));
            if (m < 0 && errno == EINTR) continue;
            if (m < 0) goto done;
            if (m == 0) break;
            have += m;
        }
        got[k] = have;
        at += len;
    }
    if (fstat(fd, &b) == 0 && same_file(&a, &b)) {
        ident[0] = (int64_t)a.st_dev;
        ident[1] = (int64_t)a.st_ino;
        ident[2] = (int64_t)a.st_size;
        ident[3] = stat_ns(&a.st_mtim);
        ident[4] = stat_ns(&a.st_ctim);
        r = ZK_OK;
    }
done:
    close(fd);
    return r;
}
