/* Plane assembly in native code: the plane slice of each of a list of whole blocks copied
 * into a plane being assembled (viewer/core/assembly.py's scatter_blocks), the interpreter
 * lock released for the copies.
 *
 * Loaded with ctypes.PyDLL (the lock held on entry): the blocks and the plane are Python
 * objects whose memory is taken through the buffer protocol here, which costs a fraction of
 * a microsecond a block where numpy's address attributes cost several.  Everything is checked
 * before anything is written; a call that cannot place every block (another element size or
 * number of dimensions, a slice out of a block's or the plane's bounds) writes nothing and
 * returns -1, and the caller copies with numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The interface version of this file's functions (the Python side checks it). */
int64_t planes_abi(void) { return 1; }

static void copy_slice(char *dst, const char *src, int64_t item, int64_t nc, int64_t nu,
                       int64_t nv, const Py_ssize_t *ss, const Py_ssize_t *ds) {
    /* ss, ds: strides (bytes) of channel, u, v in the block and in the plane. */
    for (int64_t c = 0; c < nc; c++) {
        for (int64_t v = 0; v < nv; v++) {
            const char *s = src + c * ss[0] + v * ss[2];
            char *d = dst + c * ds[0] + v * ds[2];
            if (ss[1] == item && ds[1] == item) {
                memcpy(d, s, (size_t)(nu * item));
                continue;
            }
            switch (item) {
            case 1:
                for (int64_t u = 0; u < nu; u++) d[u * ds[1]] = s[u * ss[1]];
                break;
            case 2:
                for (int64_t u = 0; u < nu; u++)
                    memcpy(d + u * ds[1], s + u * ss[1], 2);
                break;
            case 4:
                for (int64_t u = 0; u < nu; u++)
                    memcpy(d + u * ds[1], s + u * ss[1], 4);
                break;
            case 8:
                for (int64_t u = 0; u < nu; u++)
                    memcpy(d + u * ds[1], s + u * ss[1], 8);
                break;
            default:
                for (int64_t u = 0; u < nu; u++)
                    memcpy(d + u * ds[1], s + u * ss[1], (size_t)item);
            }
        }
    }
}

/* Copy into `plane` (a writable (C, U, V) array) the slice at index `depth` of block
 * dimension `normal` of each block of the list `blocks` (read-only (C, X, Y, Z) arrays of
 * the plane's element size): block dimensions `bu_dim` and `bv_dim` (1-3) run along the
 * plane's U and V, `bu` x `bv` elements from the block's corner, placed at plane rows
 * u0[k], v0[k].  Returns the number of blocks placed, or -1 (nothing written) when any block
 * or the plane is not as described. */
int64_t planes_scatter(PyObject *blocks, PyObject *plane, int64_t normal, int64_t depth,
                       int64_t bu_dim, int64_t bv_dim, int64_t bu, int64_t bv,
                       const int64_t *u0, const int64_t *v0) {
    if (!PyList_Check(blocks)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    if (n == 0) return 0;
    Py_buffer out;
    if (PyObject_GetBuffer(plane, &out, PyBUF_STRIDES | PyBUF_WRITABLE) != 0) {
        PyErr_Clear();
        return -1;
    }
    Py_buffer *views = PyMem_Malloc((size_t)n * sizeof *views);
    if (!views) {
        PyBuffer_Release(&out);
        return -1;
    }
    Py_ssize_t got = 0;
    int ok = out.ndim == 3 && normal >= 1 && normal <= 3 && bu_dim >= 1 && bu_dim <= 3
             && bv_dim >= 1 && bv_dim <= 3 && bu > 0 && bv > 0;
    for (; ok && got < n; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(blocks, got), &views[got], PyBUF_STRIDES) != 0) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        const Py_buffer *b = &views[got];
        ok = b->ndim == 4 && b->itemsize == out.itemsize && b->shape[0] == out.shape[0]
             && depth >= 0 && depth < b->shape[normal] && bu <= b->shape[bu_dim]
             && bv <= b->shape[bv_dim] && u0[got] >= 0 && u0[got] + bu <= out.shape[1]
             && v0[got] >= 0 && v0[got] + bv <= out.shape[2];
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < n; k++) {
            const Py_buffer *b = &views[k];
            Py_ssize_t ss[3] = {b->strides[0], b->strides[bu_dim], b->strides[bv_dim]};
            const char *src = (const char *)b->buf + depth * b->strides[normal];
            char *dst = (char *)out.buf + u0[k] * out.strides[1] + v0[k] * out.strides[2];
            copy_slice(dst, src, out.itemsize, out.shape[0], bu, bv, ss, out.strides);
        }
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    PyMem_Free(views);
    PyBuffer_Release(&out);
    return ok ? (int64_t)n : -1;
}
