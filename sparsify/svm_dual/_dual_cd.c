/*
 * sparsify.svm_dual._dual_cd: dual coordinate descent for the SVM with a free bias, in C.
 *
 * For fixed XVs, SLMC's inner problem in whitened coordinates (the paper's §3.4) is
 * a linear SVM on the Nz features Phi_i = T^T k_Z(x_i) (|Phi_i|^2 <= k(x_i, x_i)):
 *
 *     min_{u,b}  1/2 |u|^2 + sum_i C_i max(0, 1 - y_i (Phi_i u + b)).
 *
 * Coordinate descent on its dual (Hsieh et al. 2008, the LIBLINEAR method) costs
 * O(Nz) per coordinate and settles the many points that change side after an
 * L-BFGS step in bulk. The free bias adds the constraint y^T alpha = 0, which no
 * single-coordinate step keeps; it is handled by the proximal point method on b
 * (the method of multipliers on y^T alpha = 0): each outer step solves
 *
 *     min_{u,b'}  1/2 |u|^2 + (b' - b)^2 / (2 rho) + sum_i C_i max(0, 1 - y_i (Phi_i u + b'))
 *
 * whose dual is LIBLINEAR's with a bias feature sqrt(rho) and margins shifted by
 * b (d/d alpha_i = y_i (Phi_i u + b + rho s) - 1, s = y^T alpha), then sets b' = b + rho s.
 * The rows come signed, B_i = y_i Phi_i (the active set's B too), so one N x Nz
 * array serves both methods: y_i Phi_i u = B_i u and u = sum_i alpha_i B_i.
 * The steps converge to the free bias, where s = 0; each warm-starts from the last
 * alpha. Shrinking as in LIBLINEAR, also during the checks over every row and, from
 * a warm start, across the bias steps (see inner). The result is accurate to eps in
 * the projected gradient, enough to name the partition (bound, free, zero) that the exact
 * active-set method (_active_set.c) then polishes to the KKT point.
 *
 * Built by setuptools with -ffp-contract=off (setup.py) and a fixed-seed generator for
 * the coordinate order, so every processor takes the same steps.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffers.h"

#define CONVERGED 1
#define BUDGET 0
#define NO_MEMORY (-1)

/* splitmix64: a small, portable generator for the coordinate order */
static uint64_t
next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Four partial sums in a fixed order: the same rounding on every processor, and sums
 * that do not wait on one another (one running sum waits an addition's latency per
 * entry, which made a pass over N rows latency-bound) */
static double
dot(const double *a, const double *b, Py_ssize_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    Py_ssize_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; k++) {
        s0 += a[k] * b[k];
    }
    return (s0 + s1) + (s2 + s3);
}

/* C99's restrict, which MSVC spells __restrict */
#if defined(_MSC_VER)
#define RESTRICT __restrict
#else
#define RESTRICT restrict
#endif

/* u += t * row (restrict: the compiler may vectorise it without a run-time overlap test) */
static void
axpy(double *RESTRICT u, double t, const double *RESTRICT row, Py_ssize_t n)
{
    for (Py_ssize_t c = 0; c < n; c++) {
        u[c] += t * row[c];
    }
}

/*
 * The order of a pass over every row: runs of RUN consecutive rows, the runs in random
 * order. Rows in storage order stream from memory, where a random order over a million
 * rows waits on memory at each row; runs of 16 still mix rows stored by class.
 */
#define RUN 16

static void
run_order(Py_ssize_t *index, Py_ssize_t *runs, Py_ssize_t N, uint64_t *state)
{
    Py_ssize_t n_runs = (N + RUN - 1) / RUN, k = 0;
    for (Py_ssize_t r = 0; r < n_runs; r++) {
        runs[r] = r;
    }
    for (Py_ssize_t r = 0; r + 1 < n_runs; r++) { /* Fisher-Yates shuffle */
        Py_ssize_t j = r + (Py_ssize_t)(next_random(state) % (uint64_t)(n_runs - r));
        Py_ssize_t t = runs[r];
        runs[r] = runs[j];
        runs[j] = t;
    }
    for (Py_ssize_t r = 0; r < n_runs; r++) {
        Py_ssize_t end = (runs[r] + 1) * RUN < N ? (runs[r] + 1) * RUN : N;
        for (Py_ssize_t i = runs[r] * RUN; i < end; i++) {
            index[k++] = i;
        }
    }
}

/*
 * Coordinate descent on the dual of the proximal subproblem at bias *b until the
 * projected gradients span at most eps on every point (LIBLINEAR's test), with
 * shrinking. sigma >= 1 scales the quadratic term of each step and the updates of
 * u and s: CoCoA+'s local subproblem of one row block among sigma (Ma et al. 2015),
 * where u and s start from the sums over every block; 1 on a single machine.
 * alpha, u and s = y^T alpha are updated in place; *epochs counts the
 * passes. p holds the rows' margin targets (the linear term of the dual), or is
 * NULL: 1 for every row, the SVM. index holds 2 N + 1 entries of work space.
 *
 * With steps != NULL it also takes the proximal steps on the bias (*b += rho s,
 * counted in *steps) whenever the active rows have converged, until a pass over
 * every row has converged and the step after it moved b by at most eps. Shrinking
 * goes on during the passes over every row (a row left out meets its condition:
 * its PG is 0), so such a pass costs one sweep, not two as when each step and each
 * check restarted from every row; with keep, across the steps too. Returns
 * CONVERGED or BUDGET (max_epochs reached).
 */
static int
inner(const double *B, const double *y, const double *p, const double *C, const double *Qd,
      Py_ssize_t N, Py_ssize_t nz, double *alpha, double *u, double *s, double *b,
      double rho, double sigma, double eps, Py_ssize_t *index, uint64_t *state,
      Py_ssize_t *epochs, Py_ssize_t max_epochs, Py_ssize_t *steps, int keep)
{
    Py_ssize_t active = N;
    /* LIBLINEAR's thresholds: a row at 0 whose G exceeds the last pass's largest
     * violation, or at C_i below its smallest, is left out */
    double pg_max_old = INFINITY, pg_min_old = -INFINITY, last_step = INFINITY;
    while (*epochs < max_epochs) {
        *epochs += 1;
        int every_row = active == N;
        if (every_row) {
            run_order(index, index + N, N, state);
        }
        else {
            for (Py_ssize_t k = 0; k + 1 < active; k++) { /* Fisher-Yates shuffle */
                Py_ssize_t j = k + (Py_ssize_t)(next_random(state) % (uint64_t)(active - k));
                Py_ssize_t t = index[k];
                index[k] = index[j];
                index[j] = t;
            }
        }
        double pg_max = -INFINITY, pg_min = INFINITY;
        int shrunk = 0;
        for (Py_ssize_t k = 0; k < active; k++) {
            Py_ssize_t i = index[k];
            const double *row = B + i * nz;
            double G = dot(row, u, nz) + y[i] * (*b + rho * *s) - (p != NULL ? p[i] : 1.0);
            double PG = 0.0;
            if ((alpha[i] <= 0.0 && G > pg_max_old) || (alpha[i] >= C[i] && G < pg_min_old)) {
                /* far outside the margin at 0, or deep inside it at C_i: out for now */
                active -= 1;
                index[k] = index[active];
                index[active] = i;
                k -= 1;
                shrunk = 1;
                continue;
            }
            if (alpha[i] <= 0.0) {
                PG = G < 0.0 ? G : 0.0;
            }
            else if (alpha[i] >= C[i]) {
                PG = G > 0.0 ? G : 0.0;
            }
            else {
                PG = G;
            }
            if (PG > pg_max) {
                pg_max = PG;
            }
            if (PG < pg_min) {
                pg_min = PG;
            }
            if (fabs(PG) > 1e-12) {
                double a = alpha[i] - G / (sigma * Qd[i]);
                a = a < 0.0 ? 0.0 : (a > C[i] ? C[i] : a);
                double d = a - alpha[i];
                alpha[i] = a;
                *s += sigma * d * y[i];
                axpy(u, sigma * d, row, nz);
            }
        }
        if (shrunk) { /* the rows left out count with their PG of 0 */
            pg_max = pg_max > 0.0 ? pg_max : 0.0;
            pg_min = pg_min < 0.0 ? pg_min : 0.0;
        }
        pg_max_old = pg_max > 0.0 ? pg_max : INFINITY;
        pg_min_old = pg_min < 0.0 ? pg_min : -INFINITY;
        if (pg_max - pg_min > eps) {
            continue;
        }
        if (steps != NULL) {
            double step = rho * *s;
            *b += step;
            *steps += 1;
            if (fabs(step) > eps) { /* the next subproblem, on the same active rows */
                if (!keep || active == 0 || fabs(step) > 0.5 * last_step) {
                    /* unless they do not take up s (the steps no longer halve): every
                     * row again, where b would drift (ringnorm, N = 10^6, Nz = 100:
                     * keeping the rows cut coordinate descent's time by a quarter) */
                    active = N;
                }
                last_step = fabs(step);
                continue;
            }
        }
        if (every_row) {
            return CONVERGED;
        }
        active = N; /* converged on the active rows: check every row */
    }
    return BUDGET;
}

/*
 * `inner`'s work space, WORK_BYTES bytes per row: the diagonal Qd (N doubles) in the
 * return value and the index (2 N + 1 entries: a pass's order and run_order's runs).
 * NULL (both freed) where an allocation fails.
 */
#define WORK_BYTES 24.0

static double *
work_space(Py_ssize_t N, Py_ssize_t **index)
{
    double *Qd = (double *)malloc((size_t)(N > 0 ? N : 1) * sizeof(double));
    *index = (Py_ssize_t *)malloc((size_t)(2 * N + 1) * sizeof(Py_ssize_t));
    if (Qd == NULL || *index == NULL) {
        free(Qd);
        free(*index);
        *index = NULL;
        return NULL;
    }
    return Qd;
}

/*
 * Coordinate descent with the proximal point steps on b (`inner`) until a step moves
 * b by at most eps (then s = y^T alpha is at most eps / rho). alpha and b are
 * updated in place, u is written. Returns CONVERGED, BUDGET or NO_MEMORY.
 */
static int
dual_cd(const double *B, const double *y, const double *p, const double *C, Py_ssize_t N,
        Py_ssize_t nz,
        double *alpha, double *u, double *b, double rho, double eps, Py_ssize_t max_epochs,
        uint64_t seed, Py_ssize_t *epochs, Py_ssize_t *steps)
{
    Py_ssize_t *index;
    double *Qd = work_space(N, &index);
    if (Qd == NULL) {
        return NO_MEMORY;
    }
    uint64_t state = seed;
    double s = 0.0;
    int warm = 0;
    memset(u, 0, (size_t)nz * sizeof(double));
    for (Py_ssize_t i = 0; i < N; i++) {
        const double *row = B + i * nz;
        Qd[i] = dot(row, row, nz) + rho;
        if (alpha[i] != 0.0) {
            warm = 1;
            s += alpha[i] * y[i];
            axpy(u, alpha[i], row, nz);
        }
    }
    *epochs = 0;
    *steps = 0;
    /* the shrunk rows are kept across the bias steps from a warm start only: from
     * alpha = 0 the first steps move b far (by 6 on ringnorm), past the rows left out,
     * and the passes did not settle within the first evaluation's budget */
    int status = inner(B, y, p, C, Qd, N, nz, alpha, u, &s, b, rho, 1.0, eps, index, &state,
                       epochs, max_epochs, steps, warm);
    free(Qd);
    free(index);
    return status;
}

/*
 * One round of CoCoA+ on a row block: `inner` at fixed b for at most max_epochs
 * passes with the quadratic scaled by sigma, from the global u and s (sums over
 * every block). alpha is updated in place; u and s come back as the local view,
 * so the block's true change is (u_out - u_in) / sigma. Returns CONVERGED when the
 * block's projected gradients (in that local view) span at most eps.
 */
static int
local_cd(const double *B, const double *y, const double *C, Py_ssize_t N, Py_ssize_t nz,
         double *alpha, double *u, double *s, double b, double rho, double sigma, double eps,
         Py_ssize_t max_epochs, uint64_t seed, Py_ssize_t *epochs)
{
    Py_ssize_t *index;
    double *Qd = work_space(N, &index);
    if (Qd == NULL) {
        return NO_MEMORY;
    }
    uint64_t state = seed;
    for (Py_ssize_t i = 0; i < N; i++) {
        Qd[i] = dot(B + i * nz, B + i * nz, nz) + rho;
    }
    *epochs = 0;
    int status = inner(B, y, NULL, C, Qd, N, nz, alpha, u, s, &b, rho, sigma, eps, index,
                       &state, epochs, max_epochs, NULL, 0);
    free(Qd);
    free(index);
    return status;
}

/* ------------------------------------------------------------ Python's side */

/*
 * The arrays both entry points take: B (N, Nz), y and C (N,), alpha (N,) and u (Nz,)
 * writable, with every alpha_i in [0, C_i]. 1, or 0 with an error set.
 */
static int
take_rows(Held *held, const char *function, PyObject *oB, PyObject *oy, PyObject *oC,
          PyObject *oalpha, PyObject *ou, const double **B, const double **y,
          const double **C, double **alpha, double **u, Py_ssize_t *N, Py_ssize_t *nz)
{
    if ((*B = take(held, function, oB, "B", 'd', 0, 2, -1, -1, "(N, Nz)")) == NULL) {
        return 0;
    }
    *N = last_shape(held)[0];
    *nz = last_shape(held)[1];
    if ((*y = take(held, function, oy, "y", 'd', 0, 1, *N, -1, NULL)) == NULL
        || (*C = take(held, function, oC, "C", 'd', 0, 1, *N, -1, NULL)) == NULL
        || (*alpha = take(held, function, oalpha, "alpha", 'd', 1, 1, *N, -1, NULL)) == NULL
        || (*u = take(held, function, ou, "u", 'd', 1, 1, *nz, -1, NULL)) == NULL) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < *N; i++) {
        if (!((*alpha)[i] >= 0.0 && (*alpha)[i] <= (*C)[i])) {
            PyErr_Format(PyExc_ValueError,
                         "The start alpha of %s must lie in [0, C_i] for every point. "
                         "Got alpha[%zd] outside it instead.", function, i);
            return 0;
        }
    }
    return 1;
}


PyDoc_STRVAR(dual_cd_doc,
"dual_cd(B, y, C, alpha, u, b, rho, eps, max_epochs, seed, p=None)\n"
"-> (converged, b, epochs, steps)\n\n"
"Dual coordinate descent for the SVM with a free bias on the signed features B (N, Nz),\n"
"B_i = y_i Phi_i: y, C (N,) float64; alpha (N,) float64, the start, updated in place (each\n"
"in [0, C_i]); u (Nz,) float64, written (sum_i alpha_i B_i). b is the starting bias, rho > 0 the\n"
"proximal weight of the bias steps, eps the tolerance on the projected gradient and on\n"
"the last bias step; p (N,) float64 the rows' margin targets (None: 1 for every row, the\n"
"SVM). Returns whether both met eps within max_epochs passes over the data, the bias,\n"
"the passes and the bias steps taken. The GIL is released meanwhile.");

static PyObject *
py_dual_cd(PyObject *self, PyObject *args)
{
    static const char function[] = "dual_cd";
    PyObject *oB, *oy, *oC, *oalpha, *ou, *op = Py_None, *result = NULL;
    const double *B, *y, *C, *p = NULL;
    double *alpha, *u, b, rho, eps;
    Py_ssize_t max_epochs, N, nz, epochs = 0, steps = 0;
    unsigned long long seed;
    Held held = {.held = 0};
    if (!PyArg_ParseTuple(args, "OOOOOdddnK|O:dual_cd", &oB, &oy, &oC, &oalpha, &ou, &b, &rho,
                          &eps, &max_epochs, &seed, &op)) {
        return NULL;
    }
    if (!(rho > 0.0) || !isfinite(rho) || !(eps > 0.0) || !isfinite(b)) {
        PyErr_Format(PyExc_ValueError,
                     "The arguments of %s must have rho > 0, eps > 0 and a finite b. "
                     "Got rho = %R, eps = %R, b = %R instead.", function,
                     PyTuple_GET_ITEM(args, 6), PyTuple_GET_ITEM(args, 7),
                     PyTuple_GET_ITEM(args, 5));
        return NULL;
    }
    if (!take_rows(&held, function, oB, oy, oC, oalpha, ou, &B, &y, &C, &alpha, &u, &N, &nz)
        || (op != Py_None && (p = take(&held, function, op, "p", 'd', 0, 1, N, -1, NULL)) == NULL)) {
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = dual_cd(B, y, p, C, N, nz, alpha, u, &b, rho, eps, max_epochs, (uint64_t)seed,
                     &epochs, &steps);
    Py_END_ALLOW_THREADS
    if (status == NO_MEMORY) {
        PyErr_Format(PyExc_MemoryError,
                     "The SVM fast path's coordinate descent could not allocate its work "
                     "arrays (%zd MB for N = %zd points). Free memory, or fit on fewer points.",
                     (Py_ssize_t)(WORK_BYTES * (double)N / 1e6 + 1.0), N);
    }
    else {
        result = Py_BuildValue("(Odnn)", status == CONVERGED ? Py_True : Py_False, b, epochs,
                               steps);
    }
done:
    release_all(&held);
    return result;
}

PyDoc_STRVAR(local_cd_doc,
"local_cd(B, y, C, alpha, u, s, b, rho, sigma, eps, max_epochs, seed) -> (converged, s, epochs)\n\n"
"One CoCoA+ round of dual coordinate descent on a row block of the SVM with a free bias:\n"
"B (n, Nz), y, C, alpha (n,) float64 as for dual_cd (alpha updated in place); u (Nz,) the\n"
"sum of alpha_i B_i over every block and s that of alpha_i y_i, both updated in place to the\n"
"block's local view (its true change is the difference divided by sigma >= 1, the number\n"
"of blocks); b the bias of this round, rho > 0 its proximal weight. Returns whether the\n"
"block's projected gradients span at most eps, s, and the passes made (<= max_epochs).");

static PyObject *
py_local_cd(PyObject *self, PyObject *args)
{
    static const char function[] = "local_cd";
    PyObject *oB, *oy, *oC, *oalpha, *ou, *result = NULL;
    const double *B, *y, *C;
    double *alpha, *u, s, b, rho, sigma, eps;
    Py_ssize_t max_epochs, N, nz, epochs = 0;
    unsigned long long seed;
    Held held = {.held = 0};
    if (!PyArg_ParseTuple(args, "OOOOOdddddnK:local_cd", &oB, &oy, &oC, &oalpha, &ou, &s, &b,
                          &rho, &sigma, &eps, &max_epochs, &seed)) {
        return NULL;
    }
    if (!(rho > 0.0) || !isfinite(rho) || !(sigma >= 1.0) || !isfinite(sigma)
        || !(eps > 0.0) || !isfinite(b) || !isfinite(s)) {
        PyErr_Format(PyExc_ValueError,
                     "The arguments of %s must have rho > 0, sigma >= 1, eps > 0 and finite s "
                     "and b. Got rho = %R, sigma = %R, eps = %R, s = %R, b = %R instead.",
                     function, PyTuple_GET_ITEM(args, 7), PyTuple_GET_ITEM(args, 8),
                     PyTuple_GET_ITEM(args, 9), PyTuple_GET_ITEM(args, 5),
                     PyTuple_GET_ITEM(args, 6));
        return NULL;
    }
    if (!take_rows(&held, function, oB, oy, oC, oalpha, ou, &B, &y, &C, &alpha, &u, &N, &nz)) {
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = local_cd(B, y, C, N, nz, alpha, u, &s, b, rho, sigma, eps, max_epochs,
                      (uint64_t)seed, &epochs);
    Py_END_ALLOW_THREADS
    if (status == NO_MEMORY) {
        PyErr_Format(PyExc_MemoryError,
                     "The SVM's distributed coordinate descent could not allocate its work "
                     "arrays (%zd MB for a block of %zd points). Use smaller row blocks.",
                     (Py_ssize_t)(WORK_BYTES * (double)N / 1e6 + 1.0), N);
    }
    else {
        result = Py_BuildValue("(Odn)", status == CONVERGED ? Py_True : Py_False, s, epochs);
    }
done:
    release_all(&held);
    return result;
}

static PyMethodDef methods[] = {
    {"dual_cd", py_dual_cd, METH_VARARGS, dual_cd_doc},
    {"local_cd", py_local_cd, METH_VARARGS, local_cd_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "sparsify.svm_dual._dual_cd",
    "Dual coordinate descent for the SVM with a free bias (see sparsify.svm_dual), "
    "in C.",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__dual_cd(void)
{
    return PyModule_Create(&module);
}
