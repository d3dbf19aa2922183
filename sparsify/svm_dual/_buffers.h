/*
 * The argument checks the SVM fast path's C extensions share (_active_set.c, _dual_cd.c):
 * numpy arrays come through the buffer protocol, without numpy's headers, and each is
 * checked for element kind, shape, layout and writability, with an error that says
 * what to pass. Static functions: each extension compiles its own copy.
 */
#ifndef SPARSIFY_BUFFERS_H
#define SPARSIFY_BUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* What an argument must be: element kind, writable or not, shape (-1: any). */
typedef struct {
    const char *name;
    char kind; /* 'd' float64, '?' bool, 'q' int64 */
    int writable;
    int ndim;
    Py_ssize_t shape[2];
    const char *described; /* the shape in words, where a dimension is free; else NULL */
} Spec;

static const char *
kind_name(char kind)
{
    return kind == 'd' ? "float64" : kind == '?' ? "bool" : "int64";
}

/* Whether a buffer's struct format holds one native item of the given kind. */
static int
format_matches(const char *format, Py_ssize_t itemsize, char kind)
{
    static const union { uint16_t word; unsigned char byte[2]; } order = {1};
    const char *codes = kind == 'd' ? "d" : kind == '?' ? "?" : "lq";
    if (itemsize != (kind == '?' ? 1 : 8) || format == NULL) {
        return 0;
    }
    if (*format == '@' || *format == '=' || *format == (order.byte[0] ? '<' : '>')
        || (*format == '!' && !order.byte[0])) {
        format++;
    }
    return format[0] != '\0' && format[1] == '\0' && strchr(codes, format[0]) != NULL;
}

static void
shape_text(char *out, size_t size, int ndim, const Py_ssize_t *shape)
{
    if (ndim == 1) {
        PyOS_snprintf(out, size, "(%zd,)", shape[0]);
    }
    else if (ndim == 2) {
        PyOS_snprintf(out, size, "(%zd, %zd)", shape[0], shape[1]);
    }
    else {
        PyOS_snprintf(out, size, "with %d dimensions", ndim);
    }
}

/*
 * The buffer of obj, checked against spec; on a mismatch a TypeError (wrong type
 * or element kind) or ValueError (shape, layout, read-only) that says what to
 * pass, and -1 with nothing held.
 */
static int
get_array(const char *function, PyObject *obj, const Spec *spec, Py_buffer *view)
{
    char want[64], got[64];
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (spec->writable ? PyBUF_WRITABLE : 0);
    if (spec->described != NULL) {
        PyOS_snprintf(want, sizeof(want), "%s", spec->described);
    }
    else {
        shape_text(want, sizeof(want), spec->ndim, spec->shape);
    }
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        if (spec->writable && PyObject_GetBuffer(obj, view, flags & ~PyBUF_WRITABLE) == 0) {
            PyBuffer_Release(view);
            PyErr_Format(PyExc_ValueError,
                         "The '%s' array of %s must be writable (it is updated in place). "
                         "Got a read-only array instead.", spec->name, function);
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "The '%s' argument of %s must be a C-contiguous %s array of shape %s. "
                         "Got %.100s instead.", spec->name, function, kind_name(spec->kind),
                         want, Py_TYPE(obj)->tp_name);
        }
        return -1;
    }
    const char *problem = NULL;
    if (!format_matches(view->format, view->itemsize, spec->kind)) {
        PyErr_Format(PyExc_TypeError,
                     "The '%s' array of %s must hold %s. Got items of format '%s' and size %zd "
                     "instead.", spec->name, function, kind_name(spec->kind),
                     view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    int shape_ok = view->ndim == spec->ndim;
    for (int a = 0; shape_ok && a < spec->ndim; a++) {
        shape_ok = spec->shape[a] < 0 || view->shape[a] == spec->shape[a];
    }
    if (!shape_ok) {
        problem = "shape";
    }
    else if (!PyBuffer_IsContiguous(view, 'C')) {
        problem = "layout";
    }
    if (problem != NULL) {
        shape_text(got, sizeof(got), view->ndim, view->shape);
        if (problem[0] == 's') {
            PyErr_Format(PyExc_ValueError,
                         "The '%s' array of %s must have shape %s. Got shape %s instead.",
                         spec->name, function, want, got);
        }
        else {
            PyErr_Format(PyExc_ValueError,
                         "The '%s' array of %s must be C-contiguous "
                         "(numpy.ascontiguousarray makes it so). Got a strided view instead.",
                         spec->name, function);
        }
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Up to 12 buffers held by one call, all released by release_all. */
typedef struct {
    Py_buffer views[12];
    int held;
} Held;

/*
 * The memory of obj's buffer, checked against the spec that follows (never NULL,
 * even where the buffer is empty), or NULL with an error.
 */
static void *
take(Held *held, const char *function, PyObject *obj, const char *name, char kind,
     int writable, int ndim, Py_ssize_t rows, Py_ssize_t cols, const char *described)
{
    static double nothing; /* what an empty buffer points to; never read */
    Spec spec = {name, kind, writable, ndim, {rows, cols}, described};
    Py_buffer *view = &held->views[held->held];
    if (get_array(function, obj, &spec, view) < 0) {
        return NULL;
    }
    held->held += 1;
    return view->buf != NULL ? view->buf : &nothing;
}

/* The shape of the buffer taken last. */
static const Py_ssize_t *
last_shape(const Held *held)
{
    return held->views[held->held - 1].shape;
}

static void
release_all(Held *held)
{
    while (held->held > 0) {
        held->held -= 1;
        PyBuffer_Release(&held->views[held->held]);
    }
}

#endif /* SPARSIFY_BUFFERS_H */
