/* Decoding Neuroglancer compressed_segmentation chunks in native code: the voxels of a box
 * of each chunk of a batch, written straight into the caller's array at its strides, every
 * offset and every looked-up index checked against the stream's length, with no Python
 * between the chunks and without the interpreter lock (ctypes releases it for the call).
 *
 * A chunk is, per channel (its start word in the channel header), a grid of blocks: per
 * block a 64-bit header (lookup table offset: 24 bits, encoded bits: 8, encoded values
 * offset: 32; offsets in 32-bit words from the channel's start), the packed values (bits
 * each, x fastest within the block) and the block's lookup table of uint32 or uint64 values.
 *
 * The checks are the ones the Python path (viewer/format/precomputed/cseg.py) makes, on the
 * same words: a job that fails here fails there, and the caller builds its error by decoding
 * that chunk again in Python, so that the words of a message are written in one place.  A
 * job's status says only which check failed, in which channel and block.
 */
#include <stdint.h>
#include <string.h>

/* The interface version of this file's functions (the Python side checks it). */
int64_t cseg_abi(void) { return 1; }

enum {
    CSEG_OK = 0,
    CSEG_HEADER = 1,  /* stream shorter than its channel header, or a channel past its end */
    CSEG_BLOCKS = 2,  /* fewer words than the channel's block headers */
    CSEG_BITS = 3,    /* a block's encoded bits not 0, 1, 2, 4, 8, 16 or 32 */
    CSEG_VALUES = 4,  /* a block's encoded values run past the end */
    CSEG_TABLE = 5    /* a looked-up index's table entry lies past the end */
};

/* One chunk of a batch (filled by the caller; status, channel and block by the decoder). */
typedef struct {
    const uint32_t *words;
    int64_t nwords;
    int64_t box[3];       /* the chunk's voxels (clipped to the extent) */
    int64_t lo[3], hi[3]; /* the voxels wanted, inside box */
    char *out;            /* where voxel lo of channel 0 goes */
    int64_t stride[4];    /* bytes: channel, x, y, z */
    int64_t status;
    int64_t channel;
    int64_t block;
} cseg_job;

static int good_bits(uint32_t b) {
    return b == 0 || b == 1 || b == 2 || b == 4 || b == 8 || b == 16 || b == 32;
}

static inline uint32_t index_at(const uint32_t *values, uint32_t bits, uint32_t mask,
                                int64_t i) {
    int64_t bit = i * (int64_t)bits;
    return (values[bit >> 5] >> (bit & 31)) & mask;
}

static int64_t fail(cseg_job *job, int64_t status, int64_t channel, int64_t block) {
    job->status = status;
    job->channel = channel;
    job->block = block;
    return status;
}

static int64_t decode_channel(cseg_job *job, int64_t c, const int64_t *block, int64_t wide) {
    int64_t start = job->words[c];
    if (start >= job->nwords) return fail(job, CSEG_HEADER, c, -1);
    const uint32_t *w = job->words + start;
    int64_t n = job->nwords - start;
    int64_t grid[3], b_lo[3], b_hi[3];
    for (int a = 0; a < 3; a++) {
        grid[a] = (job->box[a] + block[a] - 1) / block[a];
        b_lo[a] = job->lo[a] / block[a];
        b_hi[a] = (job->hi[a] + block[a] - 1) / block[a];
    }
    int64_t nblocks = grid[0] * grid[1] * grid[2];
    if (n < 2 * nblocks) return fail(job, CSEG_BLOCKS, c, -1);
    int64_t layer = block[0] * block[1];
    /* one layer of blocks with whole words per z layer: only the z layers wanted count */
    int partial = b_hi[2] - b_lo[2] == 1 && layer % 32 == 0;
    char *base = job->out + c * job->stride[0];
    for (int64_t gz = b_lo[2]; gz < b_hi[2]; gz++)
        for (int64_t gy = b_lo[1]; gy < b_hi[1]; gy++)
            for (int64_t gx = b_lo[0]; gx < b_hi[0]; gx++) {
                int64_t k = gx + grid[0] * (gy + grid[1] * gz);
                uint32_t h0 = w[2 * k], values_at = w[2 * k + 1];
                uint32_t bits = h0 >> 24;
                int64_t table_at = h0 & 0xFFFFFF;
                if (!good_bits(bits)) return fail(job, CSEG_BITS, c, k);
                int64_t z0 = partial ? job->lo[2] - gz * block[2] : 0;
                int64_t nz = partial ? job->hi[2] - job->lo[2] : block[2];
                uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
                const uint32_t *values = w + values_at;
                if (bits) {
                    int64_t last = ((int64_t)bits * layer * (z0 + nz) + 31) / 32;
                    if ((int64_t)values_at + last > n) return fail(job, CSEG_VALUES, c, k);
                }
                /* a table that may not fit whole: its largest index used must */
                if (table_at + ((int64_t)mask + 1) * wide > n) {
                    int64_t top = 0;
                    if (bits)
                        for (int64_t i = layer * z0; i < layer * (z0 + nz); i++) {
                            int64_t v = index_at(values, bits, mask, i);
                            if (v > top) top = v;
                        }
                    if (table_at + (top + 1) * wide > n) return fail(job, CSEG_TABLE, c, k);
                }
                const uint32_t *table = w + table_at;
                int64_t x0 = gx * block[0], y0 = gy * block[1], zb = gz * block[2];
                int64_t xa = job->lo[0] > x0 ? job->lo[0] : x0;
                int64_t xb = job->hi[0] < x0 + block[0] ? job->hi[0] : x0 + block[0];
                int64_t ya = job->lo[1] > y0 ? job->lo[1] : y0;
                int64_t yb = job->hi[1] < y0 + block[1] ? job->hi[1] : y0 + block[1];
                int64_t za = job->lo[2] > zb ? job->lo[2] : zb;
                int64_t zc = job->hi[2] < zb + block[2] ? job->hi[2] : zb + block[2];
                for (int64_t z = za; z < zc; z++)
                    for (int64_t y = ya; y < yb; y++) {
                        char *row = base + (z - job->lo[2]) * job->stride[3] +
                                    (y - job->lo[1]) * job->stride[2] +
                                    (xa - job->lo[0]) * job->stride[1];
                        int64_t i = (xa - x0) + block[0] * ((y - y0) + block[1] * (z - zb));
                        int64_t sx = job->stride[1];
                        if (!bits) {  /* one value for the whole block */
                            if (wide == 1) {
                                uint32_t v = table[0];
                                for (int64_t x = xa; x < xb; x++, row += sx)
                                    memcpy(row, &v, 4);
                            } else {
                                uint64_t v;
                                memcpy(&v, table, 8);
                                for (int64_t x = xa; x < xb; x++, row += sx)
                                    memcpy(row, &v, 8);
                            }
                        } else if (wide == 1) {
                            for (int64_t x = xa; x < xb; x++, i++, row += sx) {
                                memcpy(row, table + index_at(values, bits, mask, i), 4);
                            }
                        } else {
                            for (int64_t x = xa; x < xb; x++, i++, row += sx) {
                                int64_t e = 2 * (int64_t)index_at(values, bits, mask, i);
                                memcpy(row, table + e, 8);  /* two little-endian words */
                            }
                        }
                    }
            }
    return CSEG_OK;
}

/* Decode count jobs of chunks of channels channels in blocks of block voxels, values of
 * wide 32-bit words (1: uint32, 2: uint64); the number of jobs that failed (each its
 * status).  Nothing is written outside the boxes wanted; a failed job may have written part
 * of its box. */
int64_t cseg_decode(cseg_job *jobs, int64_t count, int64_t channels, const int64_t *block,
                    int64_t wide) {
    int64_t failed = 0;
    for (int64_t j = 0; j < count; j++) {
        cseg_job *job = &jobs[j];
        job->status = CSEG_OK;
        job->channel = job->block = -1;
        if (job->nwords < channels) {
            fail(job, CSEG_HEADER, -1, -1);
            failed++;
            continue;
        }
        for (int64_t c = 0; c < channels; c++)
            if (decode_channel(job, c, block, wide) != CSEG_OK) {
                failed++;
                break;
            }
    }
    return failed;
}
