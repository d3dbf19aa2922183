/*
 * sparsify.core.structured._blocks: the structured interior point's small dense blocks, in C.
 *
 * The blocks are symmetric and stored packed: the lower triangle row by row, entry (i, j)
 * with j <= i at i (i + 1) / 2 + j, size (size + 1) / 2 entries per block, one block after
 * another. `invert(blocks, count, size, singular)` inverts `count` of them in place, by
 * Gauss-Jordan elimination with partial pivoting on an unpacked copy; `singular` (a bool
 * buffer of `count`) is set where a pivot was exactly zero (that block is left undefined,
 * for the caller to redo). `apply` is the block-diagonal product with them.
 * LAPACK through numpy spends about a microsecond of call overhead per matrix, more than the
 * arithmetic of the 4 x 4 to 9 x 9 blocks of a point-separable formulation; here the loop
 * over blocks is C's. Packed, a pass over the blocks reads about half the memory of full
 * storage: at 10^6 points the blocks outgrow the cache and every pass is memory-bound.
 * Built by setuptools at install (setup.py, -ffp-contract=off);
 * no numpy headers: the arrays come through the buffer protocol and are checked here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Invert the n x n row-major matrix a in place; perm holds n ints of scratch. 0: singular. */
static int
invert_one(double *a, Py_ssize_t n, Py_ssize_t *perm)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t p = k;
        double best = fabs(a[k * n + k]);
        for (Py_ssize_t i = k + 1; i < n; i++) {
            double v = fabs(a[i * n + k]);
            if (v > best) {
                best = v;
                p = i;
            }
        }
        if (best == 0.0) {
            return 0;
        }
        perm[k] = p;
        if (p != k) {
            for (Py_ssize_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
        }
        double pivot = a[k * n + k];
        a[k * n + k] = 1.0;
        for (Py_ssize_t j = 0; j < n; j++) {
            a[k * n + j] /= pivot;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i == k) {
                continue;
            }
            double f = a[i * n + k];
            if (f == 0.0) {
                continue;
            }
            a[i * n + k] = 0.0;
            for (Py_ssize_t j = 0; j < n; j++) {
                a[i * n + j] -= f * a[k * n + j];
            }
        }
    }
    /* the row swaps of the elimination are column swaps of the inverse, undone in reverse */
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        Py_ssize_t p = perm[k];
        if (p != k) {
            for (Py_ssize_t i = 0; i < n; i++) {
                double t = a[i * n + k];
                a[i * n + k] = a[i * n + p];
                a[i * n + p] = t;
            }
        }
    }
    return 1;
}

static int
get_buffer(PyObject *obj, Py_buffer *view, const char *name, const char *format,
           Py_ssize_t itemsize, Py_ssize_t count)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyErr_Format(PyExc_ValueError, "invert: %s must be a writable C-contiguous array", name);
        return -1;
    }
    const char *f = view->format == NULL ? "B" : view->format;
    if (*f == '@' || *f == '=' || *f == '<') {
        f++;
    }
    if (view->itemsize != itemsize || strcmp(f, format) != 0 || view->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "invert: %s must hold %zd items of format '%s'; got %zd "
                     "bytes of format '%s'", name, count, format, view->len,
                     view->format == NULL ? "B" : view->format);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *
py_invert(PyObject *self, PyObject *args)
{
    PyObject *blocks_obj, *singular_obj;
    Py_ssize_t count, size;
    if (!PyArg_ParseTuple(args, "OnnO", &blocks_obj, &count, &size, &singular_obj)) {
        return NULL;
    }
    if (count < 0 || size < 1 || (count > 0 && size > PY_SSIZE_T_MAX / size / count / 8)) {
        PyErr_SetString(PyExc_ValueError, "invert: count must be >= 0 and size >= 1");
        return NULL;
    }
    Py_buffer blocks, singular;
    if (get_buffer(blocks_obj, &blocks, "blocks", "d", 8, count * (size * (size + 1) / 2)) < 0) {
        return NULL;
    }
    if (get_buffer(singular_obj, &singular, "singular", "?", 1, count) < 0) {
        PyBuffer_Release(&blocks);
        return NULL;
    }
    Py_ssize_t *perm = (Py_ssize_t *)malloc((size_t)size * sizeof(Py_ssize_t));
    double *full = (double *)malloc((size_t)(size * size) * sizeof(double));
    if (perm == NULL || full == NULL) {
        free(perm);
        free(full);
        PyBuffer_Release(&blocks);
        PyBuffer_Release(&singular);
        return PyErr_NoMemory();
    }
    const Py_ssize_t tri = size * (size + 1) / 2;
    double *a = (double *)blocks.buf;
    char *flags = (char *)singular.buf;
    Py_ssize_t failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < count; b++) {
        double *packed = a + b * tri;
        for (Py_ssize_t i = 0, k = 0; i < size; i++) {
            for (Py_ssize_t j = 0; j <= i; j++, k++) {
                full[i * size + j] = full[j * size + i] = packed[k];
            }
        }
        int ok = invert_one(full, size, perm);
        flags[b] = (char)!ok;
        failed += !ok;
        if (ok) {
            /* the inverse of a symmetric matrix, symmetric up to round-off: the mean */
            for (Py_ssize_t i = 0, k = 0; i < size; i++) {
                for (Py_ssize_t j = 0; j <= i; j++, k++) {
                    packed[k] = 0.5 * (full[i * size + j] + full[j * size + i]);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(perm);
    free(full);
    PyBuffer_Release(&blocks);
    PyBuffer_Release(&singular);
    return PyLong_FromSsize_t(failed);
}

static PyObject *
py_apply(PyObject *self, PyObject *args)
{
    PyObject *blocks_obj, *x_obj, *out_obj;
    Py_ssize_t count, size;
    if (!PyArg_ParseTuple(args, "OnnOO", &blocks_obj, &count, &size, &x_obj, &out_obj)) {
        return NULL;
    }
    if (count < 0 || size < 1 || (count > 0 && size > PY_SSIZE_T_MAX / size / count / 8)) {
        PyErr_SetString(PyExc_ValueError, "apply: count must be >= 0 and size >= 1");
        return NULL;
    }
    Py_buffer blocks, x, out;
    if (PyObject_GetBuffer(blocks_obj, &blocks, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(x_obj, &x, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&blocks);
        return NULL;
    }
    if (get_buffer(out_obj, &out, "out", "d", 8, count * size) < 0) {
        PyBuffer_Release(&blocks);
        PyBuffer_Release(&x);
        return NULL;
    }
    const Py_ssize_t tri = size * (size + 1) / 2;
    if (blocks.len != count * tri * 8 || x.len != count * size * 8
        || blocks.itemsize != 8 || x.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "apply: blocks must hold count*size*(size+1)/2 "
                        "float64 and x count*size float64");
        PyBuffer_Release(&blocks);
        PyBuffer_Release(&x);
        PyBuffer_Release(&out);
        return NULL;
    }
    const double *a = (const double *)blocks.buf;
    const double *v = (const double *)x.buf;
    double *y = (double *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < count; b++) {
        const double *m = a + b * tri;
        const double *vb = v + b * size;
        double *yb = y + b * size;
        for (Py_ssize_t i = 0; i < size; i++) {
            yb[i] = 0.0;
        }
        for (Py_ssize_t i = 0; i < size; i++) {
            /* row i of the lower triangle, entries (i, 0..i): also column i above them */
            double acc = m[i] * vb[i];
            for (Py_ssize_t j = 0; j < i; j++) {
                acc += m[j] * vb[j];
                yb[j] += m[j] * vb[i];
            }
            yb[i] += acc;
            m += i + 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&blocks);
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(apply_doc,
"apply(blocks, count, size, x, out) -> None\n\n"
"out[b] = blocks[b] @ x[b] for count symmetric size x size float64 matrices, packed (the\n"
"lower triangle row by row), and vectors of size, stored one after another: the\n"
"block-diagonal product, without index arrays.");

PyDoc_STRVAR(invert_doc,
"invert(blocks, count, size, singular) -> int\n\n"
"Invert count symmetric size x size float64 matrices, packed (the lower triangle row by\n"
"row) one after another in blocks, in place (Gauss-Jordan with partial pivoting);\n"
"singular[b] is set where block b had an exactly zero pivot (its contents are then\n"
"undefined). Returns the number of those.");

static PyMethodDef methods[] = {
    {"invert", py_invert, METH_VARARGS, invert_doc},
    {"apply", py_apply, METH_VARARGS, apply_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "sparsify.core.structured._blocks",
    "The structured interior point's batched inverses of small dense blocks, in C.",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__blocks(void)
{
    return PyModule_Create(&module);
}
