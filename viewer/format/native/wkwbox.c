/* Reading a box of one WKW data file in native code: the blocks the box meets, their stored
 * bytes (pread), LZ4 decoding and the copy of their voxels into the output, with no Python
 * between the blocks and without the interpreter lock (ctypes releases it for the call).
 *
 * A read is a plan (wkw_plan_new: the block list, sorted in file order, its byte ranges
 * checked) worked by one or more threads (wkw_plan_work: each takes the next group of blocks
 * until none is left) and freed (wkw_plan_free).  The threads are the caller's: this file
 * starts none.  LZ4 is called through the function pointers the caller passes (liblz4 as
 * Python's ctypes loaded it), so building needs no LZ4 headers.
 *
 * Failures are reported, never worded here: the status names the kind, the block (Morton
 * index) and its byte range, and the caller builds the same error its Python path builds.
 * (Over 600 lines: the box read, the read by path and the one-block files share the checks and
 * the copy; the seam to split along is the two path-based entry points.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

typedef int (*lz4_whole_fn)(const char *src, char *dst, int size, int capacity);
typedef int (*lz4_partial_fn)(const char *src, char *dst, int size, int target, int capacity);

/* What a box read needs of the file and of the output (filled by the caller). */
typedef struct {
    int64_t fd;
    int64_t block_len;      /* voxels per block side */
    int64_t voxel_bytes;    /* bytes per voxel, all channels */
    int64_t compressed;     /* 1: LZ4 blocks found through the jump table */
    int64_t data_offset;
    int64_t file_size;
    const int64_t *ranges;  /* compressed: [data offset, end of block 0, ...] (N + 1) */
    int64_t num_blocks;
    lz4_whole_fn whole;
    lz4_partial_fn partial;
    int64_t lo[3], hi[3];   /* the box, file voxels, clipped to the file */
    char *out;              /* the output voxel of file voxel (0, 0, 0) minus nothing: see shift */
    int64_t stride_y, stride_z;  /* bytes; an x row (all channels) is contiguous */
    int64_t shift[3];       /* file voxel v lands at output voxel v + shift */
    int64_t merge_gap;      /* stored bytes closer than this are read by one pread */
    int64_t group;          /* blocks a thread takes at a time */
    int64_t stream_over;    /* an output of more bytes is stored in whole lines (place_pair) */
} wkw_box;

/* WKW_RETRY: a read by path left for the Python path, which decides (the file is absent or
 * does not open, is not the version whose table was given, was changed a moment ago or during
 * the read, or a one-block file is anything but the common sound case). */
enum { WKW_OK = 0, WKW_RANGE = 1, WKW_DECODE = 2, WKW_SHORT = 3, WKW_OS = 4, WKW_MEMORY = 5,
       WKW_RETRY = 6 };

/* The outcome of a plan or of one thread's work: the lowest failing block of this call. */
typedef struct {
    int64_t kind;
    int64_t block;    /* Morton index */
    int64_t start, end;
    int64_t got, wanted;
    int64_t partial;  /* a prefix decode (the box needs the block's first planes only) */
    int64_t error;    /* errno for WKW_OS */
} wkw_status;

void wkw_plan_free(void *handle);

typedef struct {
    int64_t morton, start, end;
    int32_t bx, by, bz;
} item;

typedef struct {
    wkw_box box;
    item *items;
    int64_t count;
    int64_t next;           /* the next group to take (atomic) */
    int64_t max_stored;
    int pairs;              /* x-neighbour blocks are stored as whole lines (see place_pair) */
} plan;

static int64_t spread(int64_t v) {
    int64_t r = 0;
    for (int bit = 0; bit < 21; bit++) r |= ((v >> bit) & 1) << (3 * bit);
    return r;
}

static int by_start(const void *a, const void *b) {
    const item *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void fail(wkw_status *st, int64_t kind, const item *it, int64_t got, int64_t wanted,
                 int64_t partial, int64_t error) {
    if (st->kind != WKW_OK && st->block <= it->morton) return;
    st->kind = kind;
    st->block = it->morton;
    st->start = it->start;
    st->end = it->end;
    st->got = got;
    st->wanted = wanted;
    st->partial = partial;
    st->error = error;
}

/* pread all n bytes (retrying short reads and EINTR); the bytes read, or -errno. */
static int64_t read_at(int fd, char *dst, int64_t n, int64_t at) {
    int64_t done = 0;
    while (done < n) {
        ssize_t got = pread(fd, dst + done, (size_t)(n - done), (off_t)(at + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (got == 0) break;
        done += got;
    }
    return done;
}

void *wkw_plan_new(const wkw_box *box, wkw_status *st) {
    memset(st, 0, sizeof *st);
    int64_t b = box->block_len;
    int64_t blo[3], bhi[3], n = 1;
    for (int a = 0; a < 3; a++) {
        blo[a] = box->lo[a] / b;
        bhi[a] = (box->hi[a] - 1) / b + 1;
        n *= bhi[a] - blo[a];
    }
    plan *p = calloc(1, sizeof *p);
    item *items = malloc((size_t)n * sizeof *items);
    if (!p || !items) {
        free(p);
        free(items);
        st->kind = WKW_MEMORY;
        return NULL;
    }
    p->box = *box;
    p->items = items;
    p->count = n;
#ifdef __SSE2__
    int64_t out_bytes = box->voxel_bytes;
    for (int a = 0; a < 3; a++) out_bytes *= box->hi[a] - box->lo[a];
    p->pairs = box->compressed && out_bytes > box->stream_over && b * box->voxel_bytes == 32
               && box->stride_y % 64 == 0 && box->stride_z % 64 == 0;
#endif
    int64_t bb = b * b * b * box->voxel_bytes;
    int64_t bound = bb + bb / 255 + 16;
    int64_t k = 0;
    for (int64_t z = blo[2]; z < bhi[2]; z++)
        for (int64_t y = blo[1]; y < bhi[1]; y++)
            for (int64_t x = blo[0]; x < bhi[0]; x++) {
                item *it = &items[k++];
                it->bx = (int32_t)x;
                it->by = (int32_t)y;
                it->bz = (int32_t)z;
                it->morton = spread(x) | spread(y) << 1 | spread(z) << 2;
                if (box->compressed) {
                    it->start = box->ranges[it->morton];
                    it->end = box->ranges[it->morton + 1];
                    if (it->start < box->data_offset || it->end < it->start
                        || it->end > box->file_size || it->end == it->start
                        || it->end - it->start > bound)
                        fail(st, WKW_RANGE, it, 0, 0, 0, 0);
                } else {
                    it->start = box->data_offset + it->morton * bb;
                    it->end = it->start + bb;
                    if (it->end > box->file_size) fail(st, WKW_RANGE, it, 0, 0, 0, 0);
                }
                if (it->end - it->start > p->max_stored) p->max_stored = it->end - it->start;
            }
    if (st->kind != WKW_OK) {
        free(items);
        free(p);
        return NULL;
    }
    qsort(items, (size_t)n, sizeof *items, by_start);
    return p;
}

/* Rows of `n` bytes from `s` (one after another, `ss` apart) to `d` (`ds` apart).  Rows of
 * the common sizes are copied with a memcpy of constant size, which the compiler inlines as a
 * few moves: a call to memcpy per row of 32 bytes cost more than the copy itself. */
#define ROWS(N)                                                     \
    for (int64_t r = 0; r < rows; r++, d += ds, s += ss) memcpy(d, s, N); \
    return;
static void copy_rows(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, int64_t rows) {
    switch (n) {
    case 1: ROWS(1)
    case 2: ROWS(2)
    case 4: ROWS(4)
    case 8: ROWS(8)
    case 16: ROWS(16)
    case 32: ROWS(32)
    case 64: ROWS(64)
    case 128: ROWS(128)
    default:
        break;
    }
    /* Other short rows: two copies of a constant size that overlap in the middle. */
#define PAIR(N)                                                                   \
    for (int64_t r = 0; r < rows; r++, d += ds, s += ss) {                        \
        memcpy(d, s, N);                                                          \
        memcpy(d + n - N, s + n - N, N);                                          \
    }                                                                             \
    return;
    if (n > 4 && n < 8) { PAIR(4) }
    if (n > 8 && n < 16) { PAIR(8) }
    if (n > 16 && n < 32) { PAIR(16) }
    if (n > 32 && n < 64) { PAIR(32) }
#undef PAIR
    for (int64_t r = 0; r < rows; r++, d += ds, s += ss) memcpy(d, s, (size_t)n);
}
#undef ROWS

/* Copy the box's part of the decoded block `data` (bytes [z][y][x][c]) into the output. */
static void place(const wkw_box *box, const item *it, const char *data) {
    int64_t b = box->block_len, vb = box->voxel_bytes;
    int64_t org[3] = {it->bx * b, it->by * b, it->bz * b};
    int64_t s[3], e[3];
    for (int a = 0; a < 3; a++) {
        s[a] = box->lo[a] > org[a] ? box->lo[a] - org[a] : 0;
        e[a] = box->hi[a] < org[a] + b ? box->hi[a] - org[a] : b;
    }
    int64_t row = (e[0] - s[0]) * vb;
    char *base = box->out + (org[0] + s[0] + box->shift[0]) * vb
                 + (org[1] + s[1] + box->shift[1]) * box->stride_y;
    for (int64_t z = s[2]; z < e[2]; z++) {
        char *dz = base + (org[2] + z + box->shift[2]) * box->stride_z;
        const char *sz = data + ((z * b + s[1]) * b + s[0]) * vb;
        copy_rows(dz, box->stride_y, sz, b * vb, row, e[1] - s[1]);
    }
}

/* Two x-neighbour blocks `a` (even x) and the next, decoded into `da` and `db`, whose rows of
 * 32 bytes side by side make whole 64-byte lines of the output: stored with stores that
 * bypass the caches, so no line is read before it is written (a plain store reads it first,
 * and a streamed half line is slower still).  For reads larger than the caches, whose output
 * nobody reads back soon.  False, having stored nothing, where the lines are not aligned. */
static int place_pair(const wkw_box *box, const item *a, const char *da, const char *db) {
#ifdef __SSE2__
    int64_t b = box->block_len, vb = box->voxel_bytes, row = b * vb;
    int64_t org[3] = {a->bx * b, a->by * b, a->bz * b};
    int64_t s[3], e[3];
    for (int k = 1; k < 3; k++) {
        s[k] = box->lo[k] > org[k] ? box->lo[k] - org[k] : 0;
        e[k] = box->hi[k] < org[k] + b ? box->hi[k] - org[k] : b;
    }
    char *base = box->out + (org[0] + box->shift[0]) * vb
                 + (org[1] + s[1] + box->shift[1]) * box->stride_y;
    if ((uintptr_t)base % 64) return 0;
    for (int64_t z = s[2]; z < e[2]; z++) {
        char *d = base + (org[2] + z + box->shift[2]) * box->stride_z;
        const char *sa = da + (z * b + s[1]) * row, *sb = db + (z * b + s[1]) * row;
        for (int64_t y = s[1]; y < e[1]; y++, d += box->stride_y, sa += row, sb += row) {
            _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)sa));
            _mm_stream_si128((__m128i *)(d + 16), _mm_loadu_si128((const __m128i *)(sa + 16)));
            _mm_stream_si128((__m128i *)(d + 32), _mm_loadu_si128((const __m128i *)sb));
            _mm_stream_si128((__m128i *)(d + 48), _mm_loadu_si128((const __m128i *)(sb + 16)));
        }
    }
    return 1;
#else
    (void)box; (void)a; (void)da; (void)db;
    return 0;
#endif
}

/* Whether `it` is the even block of a pair place_pair can store: the box takes the whole of
 * it and of its x-neighbour. */
static int pair_first(const wkw_box *box, const item *it) {
    int64_t b = box->block_len;
    return it->bx % 2 == 0 && box->lo[0] <= it->bx * b && box->hi[0] >= (it->bx + 2) * b;
}

/* Raw blocks: read just the z planes the box needs of each block, then place them. */
static void work_raw(plan *p, int64_t first, int64_t last, char *block, wkw_status *st) {
    const wkw_box *box = &p->box;
    int64_t b = box->block_len, planebytes = b * b * box->voxel_bytes;
    for (int64_t k = first; k < last; k++) {
        const item *it = &p->items[k];
        int64_t v = it->bz * b;
        int64_t z0 = box->lo[2] > v ? box->lo[2] - v : 0;
        int64_t z1 = box->hi[2] < v + b ? box->hi[2] - v : b;
        int64_t n = (z1 - z0) * planebytes;
        int64_t got = read_at((int)box->fd, block + z0 * planebytes, n,
                              it->start + z0 * planebytes);
        if (got < 0) {
            fail(st, WKW_OS, it, 0, n, 0, -got);
            continue;
        }
        if (got < n) {
            fail(st, WKW_SHORT, it, got, n, 0, 0);
            continue;
        }
        place(box, it, block);
    }
}

/* Compressed blocks: read runs of stored bytes with one pread each, decode each block (up
 * to the planes the box needs), check its size, place it.  With `spare` (a plan of pairs),
 * an even block waits decoded in `block` for its x-neighbour, decoded into `spare`, and the
 * two are stored together (place_pair). */
static void work_lz4(plan *p, int64_t first, int64_t last, char *stored, int64_t room,
                     char *block, char *spare, wkw_status *st) {
    const wkw_box *box = &p->box;
    int64_t plane = box->block_len * box->block_len * box->voxel_bytes;
    int64_t bb = plane * box->block_len;
    const item *held = NULL;  /* decoded into `block`, waiting for its neighbour */
    int64_t k = first;
    while (k < last) {
        int64_t run_lo = p->items[k].start, run_hi = p->items[k].end, j = k + 1;
        while (j < last && p->items[j].start - run_hi <= box->merge_gap
               && p->items[j].end - run_lo <= room) {
            if (p->items[j].end > run_hi) run_hi = p->items[j].end;
            j++;
        }
        int64_t got = read_at((int)box->fd, stored, run_hi - run_lo, run_lo);
        if (got < 0) {
            fail(st, WKW_OS, &p->items[k], 0, 0, 0, -got);
            k = j;
            continue;
        }
        for (; k < j; k++) {
            const item *it = &p->items[k];
            if (it->end - run_lo > got) {  /* the file shrank since it was opened */
                fail(st, WKW_SHORT, it, 0, 0, 0, 0);
                continue;
            }
            const char *src = stored + (it->start - run_lo);
            int size = (int)(it->end - it->start);
            char *into = held ? spare : block;
            /* Decoded only up to the last z plane the box needs of this block. */
            int64_t z1 = box->hi[2] - it->bz * box->block_len;
            int64_t want = z1 < box->block_len ? z1 * plane : bb;
            if (want < bb) {
                int n = box->partial(src, into, size, (int)want, (int)bb);
                if (n < want) {
                    fail(st, WKW_DECODE, it, n, want, 1, 0);
                    continue;
                }
            } else {
                int n = box->whole(src, into, size, (int)bb);
                if (n != bb) {
                    fail(st, WKW_DECODE, it, n, bb, 0, 0);
                    continue;
                }
            }
            if (held) {
                if (!(it->bx == held->bx + 1 && it->by == held->by && it->bz == held->bz
                      && place_pair(box, held, block, spare))) {
                    place(box, held, block);
                    place(box, it, spare);
                }
                held = NULL;
            } else if (spare && pair_first(box, it)) {
                held = it;
            } else {
                place(box, it, block);
            }
        }
    }
    if (held) place(box, held, block);
}

/* Take groups of blocks until none is left; any number of threads may call this on one plan
 * at once, each with its own status.  Returns the status's kind. */
int64_t wkw_plan_work(void *handle, wkw_status *st) {
    plan *p = handle;
    memset(st, 0, sizeof *st);
    const wkw_box *box = &p->box;
    int64_t b = box->block_len;
    int64_t bb = b * b * b * box->voxel_bytes;
    int64_t room = p->max_stored > (1 << 20) ? p->max_stored : (1 << 20);
    char *block = malloc((size_t)bb);
    char *spare = p->pairs ? malloc((size_t)bb) : NULL;
    char *stored = box->compressed ? malloc((size_t)room) : NULL;
    if (!block || (box->compressed && !stored) || (p->pairs && !spare)) {
        free(block);
        free(spare);
        free(stored);
        st->kind = WKW_MEMORY;
        return st->kind;
    }
    int64_t group = box->group > 0 ? box->group : 8;
    for (;;) {
        int64_t g = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        int64_t first = g * group;
        if (first >= p->count) break;
        int64_t last = first + group < p->count ? first + group : p->count;
        if (box->compressed)
            work_lz4(p, first, last, stored, room, block, spare, st);
        else
            work_raw(p, first, last, block, st);
    }
#ifdef __SSE2__
    if (p->pairs) _mm_sfence();  /* the streamed stores done before the caller reads */
#endif
    free(block);
    free(spare);
    free(stored);
    return st->kind;
}

typedef struct {
    int64_t start, end, k;
} listed;

static int listed_by_start(const void *a, const void *b) {
    const listed *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Whole blocks `indices` (any order, each within the file's block count) decoded (or read,
 * raw) into dst[k], in file order with one pread per run of neighbouring stored bytes; each
 * block's outcome in status[k] (one damaged block does not stop the others).  Returns the
 * number of blocks that failed, or -1 when out of memory. */
int64_t wkw_read_blocks(const wkw_box *box, const int64_t *indices, int64_t n, char *const *dst,
                        wkw_status *status) {
    int64_t b = box->block_len;
    int64_t bb = b * b * b * box->voxel_bytes;
    int64_t bound = bb + bb / 255 + 16, failed = 0;
    listed *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) return -1;
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        wkw_status *st = &status[k];
        memset(st, 0, sizeof *st);
        item it = {indices[k], 0, 0, 0, 0, 0};
        if (box->compressed) {
            it.start = box->ranges[it.morton];
            it.end = box->ranges[it.morton + 1];
        } else {
            it.start = box->data_offset + it.morton * bb;
            it.end = it.start + bb;
        }
        int bad = box->compressed
            ? it.start < box->data_offset || it.end <= it.start || it.end > box->file_size
              || it.end - it.start > bound
            : it.end > box->file_size;
        if (bad) {
            fail(st, WKW_RANGE, &it, 0, 0, 0, 0);
            failed++;
            continue;
        }
        st->block = it.morton;
        st->start = it.start;
        st->end = it.end;
        order[m++] = (listed){it.start, it.end, k};
    }
    qsort(order, (size_t)m, sizeof *order, listed_by_start);
    int64_t room = 1 << 20;
    for (int64_t j = 0; j < m; j++)
        if (order[j].end - order[j].start > room) room = order[j].end - order[j].start;
    char *stored = box->compressed ? malloc((size_t)room) : NULL;
    if (box->compressed && !stored) {
        free(order);
        return -1;
    }
    int64_t j = 0;
    while (j < m) {
        if (!box->compressed) {  /* raw: straight into the block's memory */
            wkw_status *st = &status[order[j].k];
            item it = {st->block, st->start, st->end, 0, 0, 0};
            int64_t got = read_at((int)box->fd, dst[order[j].k], bb, it.start);
            if (got < bb) {
                fail(st, got < 0 ? WKW_OS : WKW_SHORT, &it, got, bb, 0, got < 0 ? -got : 0);
                failed++;
            }
            j++;
            continue;
        }
        int64_t run_lo = order[j].start, run_hi = order[j].end, e = j + 1;
        while (e < m && order[e].start - run_hi <= box->merge_gap
               && order[e].end - run_lo <= room) {
            if (order[e].end > run_hi) run_hi = order[e].end;
            e++;
        }
        int64_t got = read_at((int)box->fd, stored, run_hi - run_lo, run_lo);
        for (; j < e; j++) {
            wkw_status *st = &status[order[j].k];
            item it = {st->block, st->start, st->end, 0, 0, 0};
            if (got < 0 || it.end - run_lo > got) {
                fail(st, got < 0 ? WKW_OS : WKW_SHORT, &it, 0, 0, 0, got < 0 ? -got : 0);
                failed++;
                continue;
            }
            int decoded = box->whole(stored + (it.start - run_lo), dst[order[j].k],
                                     (int)(it.end - it.start), (int)bb);
            if (decoded != bb) {
                fail(st, WKW_DECODE, &it, decoded, bb, 0, 0);
                failed++;
            }
        }
    }
    free(stored);
    free(order);
    return failed;
}


/* -- reads by path: open, check, read, check, close in one call ------------------------------ */

/* The version of a file a read by path expects (the fstat of the open that parsed its header
 * and table), and the racy-timestamp windows (ns): a file changed less than `window` ago
 * (`coarse_window` where its times have whole seconds) is left to the Python path, which
 * waits for it to settle. */
typedef struct {
    int64_t dev, ino, size, mtime, ctime;
    int64_t window, coarse_window;
} wkw_ident;

static int64_t stat_ns(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000LL + (int64_t)t->tv_nsec;
}

static void ident_of(const struct stat *s, wkw_ident *id) {
    id->dev = (int64_t)s->st_dev;
    id->ino = (int64_t)s->st_ino;
    id->size = (int64_t)s->st_size;
    id->mtime = stat_ns(&s->st_mtim);
    id->ctime = stat_ns(&s->st_ctim);
}

static int same_ident(const struct stat *s, const wkw_ident *id) {
    wkw_ident now;
    ident_of(s, &now);
    return now.dev == id->dev && now.ino == id->ino && now.size == id->size
        && now.mtime == id->mtime && now.ctime == id->ctime;
}

/* The rule of handles.racy_wait_ns: changed less than the window before now (a time in the
 * future beyond the window tells nothing, and is not racy). */
static int racy(const struct stat *s, const wkw_ident *id) {
    int64_t m = stat_ns(&s->st_mtim), c = stat_ns(&s->st_ctim);
    int64_t newest = m > c ? m : c;
    int coarse = m % 1000000000LL == 0 && c % 1000000000LL == 0;
    int64_t window = coarse ? id->coarse_window : id->window;
    struct timespec t;
    if (clock_gettime(CLOCK_REALTIME, &t) != 0) return 1;
    int64_t now = stat_ns(&t);
    if (newest - now > window) return 0;
    return newest + window - now > 0;
}

static int open_read(const char *path) {
    int fd;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* After the fstat that took the identity, wait for a write in progress (handles.py's
 * wait_for_writers: the inode lock a buffered write holds); ENXIO and the like are fine. */
static void wait_for_writers(int fd) {
#ifdef SEEK_DATA
    (void)lseek(fd, 0, SEEK_DATA);
#else
    (void)fd;
#endif
}

/* The box read of `box` (its fd left for this function) from the file at `path`, when that
 * file is the version `id` (whose table box->ranges is) and not changed a moment ago: open,
 * fstat, wait for writers, the plan worked on this thread, fstat, close.  WKW_RETRY when the
 * Python path must decide (see the enum); a damaged block as wkw_plan_work reports it, unless
 * the file changed meanwhile (then WKW_RETRY: the bytes read may mix two versions). */
int64_t wkw_read_path(const char *path, wkw_box *box, const wkw_ident *id, wkw_status *st) {
    memset(st, 0, sizeof *st);
    int fd = open_read(path);
    if (fd < 0) {
        st->kind = WKW_RETRY;
        st->error = errno;
        return st->kind;
    }
    struct stat before, after;
    if (fstat(fd, &before) != 0 || !same_ident(&before, id) || racy(&before, id)) {
        close(fd);
        st->kind = WKW_RETRY;
        return st->kind;
    }
    wait_for_writers(fd);
    box->fd = fd;
    void *p = wkw_plan_new(box, st);
    if (p) {
        wkw_plan_work(p, st);
        wkw_plan_free(p);
    }
    int changed = fstat(fd, &after) != 0 || !same_ident(&after, id);
    close(fd);
    if (changed) {
        memset(st, 0, sizeof *st);
        st->kind = WKW_RETRY;
    }
    return st->kind;
}

/* Files of one block (how N5 and Zarr v2 store every chunk), a batch of them: for file k (the
 * NUL-terminated path at paths + starts[k]) open, fstat, wait for writers, one pread of the
 * whole file into scratch (room bytes), fstat, close; then, when its 16 header bytes are
 * `header` and its one block's bytes are sound, decode (or copy, raw) the block into dst[k]
 * (block_bytes).  kind[k]: WKW_OK, or WKW_RETRY with errno in error[k] (ENOENT: no such file)
 * for anything else, damage included: the Python path reads that file again and says what is
 * wrong.  Returns the number of files not read here, or -1 when out of memory. */
int64_t wkw_read_files(const char *paths, const int64_t *starts, int64_t n,
                       const unsigned char *header, const wkw_box *box, const wkw_ident *windows,
                       char *const *dst, int64_t *kind, int64_t *error) {
    int64_t b = box->block_len;
    int64_t bb = b * b * b * box->voxel_bytes;
    int64_t bound = bb + bb / 255 + 16;
    int64_t room = box->data_offset + (box->compressed ? bound : bb);
    unsigned char *scratch = malloc((size_t)room);
    if (!scratch) return -1;
    int64_t left = 0;
    for (int64_t k = 0; k < n; k++) {
        kind[k] = WKW_RETRY;
        error[k] = 0;
        left++;
        int fd = open_read(paths + starts[k]);
        if (fd < 0) {
            error[k] = errno;
            continue;
        }
        struct stat before, after;
        wkw_ident id;
        if (fstat(fd, &before) != 0) {
            close(fd);
            continue;
        }
        ident_of(&before, &id);
        id.window = windows->window;
        id.coarse_window = windows->coarse_window;
        if (racy(&before, &id) || id.size > room || id.size < box->data_offset) {
            close(fd);
            continue;
        }
        wait_for_writers(fd);
        int64_t got = read_at(fd, (char *)scratch, id.size, 0);
        int changed = fstat(fd, &after) != 0 || !same_ident(&after, &id);
        close(fd);
        if (changed || got != id.size || memcmp(scratch, header, 16) != 0) continue;
        if (box->compressed) {
            int64_t end = 0;
            memcpy(&end, scratch + 16, 8);  /* the jump table's one entry (little-endian) */
            if (end <= box->data_offset || end > got || end - box->data_offset > bound) continue;
            int made = box->whole((const char *)scratch + box->data_offset, dst[k],
                                  (int)(end - box->data_offset), (int)bb);
            if (made != bb) continue;
        } else {
            if (box->data_offset + bb > got) continue;
            memcpy(dst[k], scratch + box->data_offset, (size_t)bb);
        }
        kind[k] = WKW_OK;
        left--;
    }
    free(scratch);
    return left;
}

int64_t wkw_plan_count(void *handle) { return ((plan *)handle)->count; }

void wkw_plan_free(void *handle) {
    plan *p = handle;
    if (!p) return;
    free(p->items);
    free(p);
}

int64_t wkw_abi(void) { return 4; }
