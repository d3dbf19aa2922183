/*
 * sparsify.svm_dual._active_set: the SVM fast path's active-set moves, in C.
 *
 * The moves of `sparsify.svm_dual.solvers.warm_active_set`. A move solves with a
 * Cholesky factor kept across moves where it can (`Gram`), an unreduced solve elsewhere;
 * past Nz + 1 free rows the null-space moves pivot one kept tableau (`shed_free`).
 * Each move is a few loops over at most N points and a solve of at most
 * 2 Nz + 2 unknowns, which numpy would spend in call overhead. Built by
 * setuptools at install (setup.py, with -ffp-contract=off so no multiply-add is
 * fused and x86-64 and arm64 round alike); no numpy headers: the arrays come
 * through the buffer protocol and are checked here.
 *
 * Status codes of the internal functions: 1 solved, 0 not solved (numerically),
 * -1 out of memory. Python sees three functions: `active_set` (what
 * sparsify.svm_dual.solvers calls) and `active_set_solve`, `null_vector` (entry points for the tests).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffers.h"

#define SOLVED 1
#define FAILED 0
#define NO_MEMORY (-1)

/* max(a, b) as Python's max computes it: a unless b is larger. */
#define PY_MAX(a, b) ((b) > (a) ? (b) : (a))

/* Row i's margin target p_i: 1 for the SVM (p NULL), y_i -+ epsilon for the SVR's rows. */
#define TARGET(p, i) ((p) != NULL ? (p)[i] : 1.0)

/* n doubles (zeroed when zero is set), or NULL; never a zero-byte request. */
static double *
new_doubles(Py_ssize_t n, int zero)
{
    size_t count = n > 0 ? (size_t)n : 1;
    if (count > SIZE_MAX / sizeof(double)) {
        return NULL;
    }
    return zero ? (double *)calloc(count, sizeof(double))
                : (double *)malloc(count * sizeof(double));
}

/* ------------------------------------------------------------------ the moves */

/*
 * x with A x = rhs by Gaussian elimination with partial pivoting (LAPACK's getrf
 * order), in place: M (n x n, row-major) is overwritten, x holds rhs on entry.
 *
 * Returns FAILED on an exact zero pivot; the caller checks the residual for
 * near-singular systems, which return garbage without a zero pivot.
 */
static int
solve_square(double *M, double *x, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t p = k;
        for (Py_ssize_t i = k + 1; i < n; i++) {
            if (fabs(M[i * n + k]) > fabs(M[p * n + k])) {
                p = i;
            }
        }
        if (M[p * n + k] == 0.0) {
            return FAILED;
        }
        if (p != k) {
            for (Py_ssize_t j = 0; j < n; j++) {
                double t = M[k * n + j];
                M[k * n + j] = M[p * n + j];
                M[p * n + j] = t;
            }
            double t = x[k];
            x[k] = x[p];
            x[p] = t;
        }
        for (Py_ssize_t i = k + 1; i < n; i++) {
            double f = M[i * n + k] / M[k * n + k];
            if (f != 0.0) {
                for (Py_ssize_t j = k + 1; j < n; j++) {
                    M[i * n + j] -= f * M[k * n + j];
                }
                x[i] -= f * x[k];
            }
        }
    }
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        double s = x[k];
        for (Py_ssize_t j = k + 1; j < n; j++) {
            s -= M[k * n + j] * x[j];
        }
        x[k] = s / M[k * n + k];
    }
    return SOLVED;
}

/*
 * Whether [beta, b, alpha_F] (sol) solves `active_set_solve`'s system to round-off.
 *
 * A nearly singular system solves without a zero pivot and returns garbage, so
 * every solve is checked against the unreduced equations; a non-finite residual
 * fails.
 */
static int
kkt_solved(const double *B, const double *y, const double *p, const Py_ssize_t *F,
           Py_ssize_t m, Py_ssize_t nz, const double *K, const double *v, double cy,
           const double *sol, double scale)
{
    double residual = 0.0, size = PY_MAX(1.0, fabs(cy));
    for (Py_ssize_t a = 0; a < nz; a++) { /* K beta - B_F^T alpha_F - v */
        double t = -v[a];
        for (Py_ssize_t c = 0; c < nz; c++) {
            t += K[a * nz + c] * sol[c];
        }
        for (Py_ssize_t k = 0; k < m; k++) {
            t -= B[F[k] * nz + a] * sol[nz + 1 + k];
        }
        if (!isfinite(t)) {
            return FAILED;
        }
        residual = PY_MAX(residual, fabs(t));
        size = PY_MAX(size, fabs(v[a]));
    }
    double t = cy; /* y_F^T alpha_F + cy */
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t i = F[k];
        t += y[i] * sol[nz + 1 + k];
        double g = y[i] * sol[nz] - TARGET(p, i); /* B_F beta + y_F b - p_F */
        for (Py_ssize_t a = 0; a < nz; a++) {
            g += B[i * nz + a] * sol[a];
        }
        if (!isfinite(g)) {
            return FAILED;
        }
        residual = PY_MAX(residual, fabs(g));
    }
    if (!isfinite(t)) {
        return FAILED;
    }
    return PY_MAX(residual, fabs(t)) <= 1e-9 * (scale + size) ? SOLVED : FAILED;
}

/*
 * [beta, b, alpha_F] for a guessed partition (into sol, nz + 1 + m entries), and
 * whether its KKT system solved.
 *
 * Unknowns beta (Nz), b and alpha on the m free points F[:m] (indices into B's
 * rows); alpha_i = C_i on the bound set U, 0 elsewhere (C holds the per-point
 * costs). U enters only through v = B_U^T C_U and cy = y_U^T C_U, which the
 * caller keeps up to date:
 *
 *     K beta - B_F^T alpha_F = v        (stationarity in beta)
 *     B_F beta + y_F b       = p_F      (free points lie on the margin: p = 1 for the SVM)
 *     y_F^T alpha_F          = -cy      (stationarity in b)
 *
 * With more margin points than unknowns (m > Nz + 1) alpha_F is not unique:
 * FAILED, and sol is left as it is.
 */
static int
active_set_solve(const double *B, const double *y, const double *p, const Py_ssize_t *F,
                 Py_ssize_t m, Py_ssize_t nz, const double *K, const double *v, double cy,
                 double scale, double *sol)
{
    Py_ssize_t n = nz + 1 + m;
    if (m > nz + 1) {
        return FAILED;
    }
    double *lhs = new_doubles(n * n, 1);
    if (lhs == NULL) {
        return NO_MEMORY;
    }
    for (Py_ssize_t a = 0; a < n; a++) {
        sol[a] = 1.0; /* the right-hand side, solved in place */
    }
    for (Py_ssize_t a = 0; a < nz; a++) {
        sol[a] = v[a];
        for (Py_ssize_t c = 0; c < nz; c++) {
            lhs[a * n + c] = K[a * nz + c];
        }
    }
    sol[nz] = -cy;
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t i = F[k], row = nz + 1 + k;
        for (Py_ssize_t a = 0; a < nz; a++) {
            lhs[a * n + row] = -B[i * nz + a];
            lhs[row * n + a] = B[i * nz + a];
        }
        lhs[row * n + nz] = lhs[nz * n + row] = y[i];
        sol[row] = TARGET(p, i);
    }
    int ok = solve_square(lhs, sol, n);
    free(lhs);
    return ok && kkt_solved(B, y, p, F, m, nz, K, v, cy, sol, scale);
}

/* out = L^-1 rhs for a lower-triangular L (n x n, row-major). */
static void
forward_substitution(const double *L, const double *rhs, double *out, Py_ssize_t n)
{
    for (Py_ssize_t a = 0; a < n; a++) {
        double t = rhs[a];
        for (Py_ssize_t c = 0; c < a; c++) {
            t -= L[a * n + c] * out[c];
        }
        out[a] = t / L[a * n + a];
    }
}

/* out = L^-T rhs for a lower-triangular L (n x n, row-major). */
static void
backward_substitution(const double *L, const double *rhs, double *out, Py_ssize_t n)
{
    for (Py_ssize_t a = n - 1; a >= 0; a--) {
        double t = rhs[a];
        for (Py_ssize_t c = a + 1; c < n; c++) {
            t -= L[c * n + a] * out[c];
        }
        out[a] = t / L[a * n + a];
    }
}

/*
 * `active_set_solve` with beta eliminated: an (m + 1)-sized system instead of
 * Nz + 1 + m.
 *
 * With K = L L^T and the whitened rows Phi_i = L^-1 B_i^T (Phi, filled by the
 * caller for the free points), beta = L^-T (L^-1 v + Phi_F^T alpha_F) and what is
 * left is the bordered system
 * [Phi_F Phi_F^T, y_F; y_F^T, 0] [alpha_F; b] = [p_F - Phi_F L^-1 v; -cy]:
 * several times cheaper once Nz is in the tens. Its solution is checked against
 * the unreduced system, which answers where this one does not solve.
 */
static int
schur_solve(const double *B, const double *y, const double *p, const Py_ssize_t *F,
            Py_ssize_t m, Py_ssize_t nz, const double *K, const double *L, const double *Phi,
            const double *v, double cy, double scale, double *sol)
{
    Py_ssize_t n = nz + 1 + m, n1 = m + 1;
    if (m > nz + 1) {
        return FAILED;
    }
    memset(sol, 0, (size_t)n * sizeof(double));
    double *u = new_doubles(nz, 0), *A = new_doubles(n1 * n1, 1), *r = new_doubles(n1, 0);
    int status = NO_MEMORY;
    if (u == NULL || A == NULL || r == NULL) {
        goto done;
    }
    forward_substitution(L, v, u, nz);
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t i = F[k];
        double t = TARGET(p, i);
        for (Py_ssize_t a = 0; a < nz; a++) {
            t -= Phi[i * nz + a] * u[a];
        }
        r[k] = t;
        A[k * n1 + m] = A[m * n1 + k] = y[i];
        for (Py_ssize_t j = 0; j < k + 1; j++) {
            t = 0.0;
            for (Py_ssize_t a = 0; a < nz; a++) {
                t += Phi[i * nz + a] * Phi[F[j] * nz + a];
            }
            A[k * n1 + j] = A[j * n1 + k] = t;
        }
    }
    r[m] = -cy;
    if (!solve_square(A, r, n1)) { /* r is now x */
        status = FAILED;
        goto done;
    }
    /* L^-1 v + Phi_F^T alpha_F, then beta by back substitution with L^T */
    for (Py_ssize_t k = 0; k < m; k++) {
        for (Py_ssize_t a = 0; a < nz; a++) {
            u[a] += r[k] * Phi[F[k] * nz + a];
        }
    }
    backward_substitution(L, u, sol, nz);
    sol[nz] = r[m];
    for (Py_ssize_t k = 0; k < m; k++) {
        sol[nz + 1 + k] = r[k];
    }
    status = kkt_solved(B, y, p, F, m, nz, K, v, cy, sol, scale);
done:
    free(u);
    free(A);
    free(r);
    return status;
}

/*
 * A unit vector d (m entries) with [B_F, y_F]^T d ~ 0 for the m >= 1 free points
 * F[:m], and whether it is finite.
 *
 * Gaussian elimination with complete pivoting, stopped one pivot short of m (or
 * at a zero pivot), sets the first column left without a pivot to one and solves
 * for the pivots. With more points than the Nz + 1 rows that is an exact null
 * vector; where a free set with full column rank made the subproblem singular
 * only numerically, the smallest last pivot is the one dropped, so d is a
 * direction of near-linear change, as the smallest right singular vector would
 * be. The moves stay exact either way: only a full step to a subproblem
 * solution is accepted.
 */
static int
null_vector(const double *B, const double *y, const Py_ssize_t *F, Py_ssize_t m,
            Py_ssize_t nz, double *d)
{
    Py_ssize_t rows = nz + 1;
    double *A = new_doubles(rows * m, 0), *x = new_doubles(m, 1);
    Py_ssize_t *cols = (Py_ssize_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(Py_ssize_t));
    int status = NO_MEMORY;
    if (A == NULL || x == NULL || cols == NULL) {
        goto done;
    }
    double big = 0.0;
    for (Py_ssize_t k = 0; k < m; k++) {
        cols[k] = k;
        for (Py_ssize_t a = 0; a < rows; a++) {
            A[a * m + k] = a < nz ? B[F[k] * nz + a] : y[F[k]];
            big = PY_MAX(big, fabs(A[a * m + k]));
        }
    }
    Py_ssize_t rank = 0, limit = rows < m - 1 ? rows : m - 1;
    while (rank < limit) {
        Py_ssize_t k = rank, p = rank, q = rank;
        for (Py_ssize_t i = k; i < rows; i++) {
            for (Py_ssize_t j = k; j < m; j++) {
                if (fabs(A[i * m + j]) > fabs(A[p * m + q])) {
                    p = i;
                    q = j;
                }
            }
        }
        if (fabs(A[p * m + q]) <= 1e-12 * big) {
            break;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            double t = A[k * m + j];
            A[k * m + j] = A[p * m + j];
            A[p * m + j] = t;
        }
        for (Py_ssize_t i = 0; i < rows; i++) {
            double t = A[i * m + k];
            A[i * m + k] = A[i * m + q];
            A[i * m + q] = t;
        }
        Py_ssize_t c = cols[k];
        cols[k] = cols[q];
        cols[q] = c;
        for (Py_ssize_t i = k + 1; i < rows; i++) {
            double f = A[i * m + k] / A[k * m + k];
            for (Py_ssize_t j = k; j < m; j++) {
                A[i * m + j] -= f * A[k * m + j];
            }
        }
        rank += 1;
    }
    x[rank] = 1.0;
    for (Py_ssize_t k = rank - 1; k >= 0; k--) {
        double s = 0.0;
        for (Py_ssize_t j = k + 1; j < rank + 1; j++) {
            s -= A[k * m + j] * x[j];
        }
        x[k] = s / A[k * m + k];
    }
    double norm = 0.0;
    for (Py_ssize_t k = 0; k < m; k++) {
        d[cols[k]] = x[k];
        norm += x[k] * x[k];
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        d[k] /= sqrt(norm);
    }
    status = isfinite(norm) ? SOLVED : FAILED;
done:
    free(A);
    free(x);
    free(cols);
    return status;
}

/*
 * The dual's gradient on the free rows F[:m] into g: B_F K^-1 (B_F^T alpha_F + v) - p_F
 * (u and w: Nz scratch doubles). It does not change along a null-space move.
 */
static void
free_gradient(const double *B, const double *p, const double *K_inv, const double *alpha,
              const Py_ssize_t *F, Py_ssize_t m, Py_ssize_t nz, const double *v, double *u,
              double *w, double *g)
{
    for (Py_ssize_t a = 0; a < nz; a++) {
        u[a] = v[a];
        for (Py_ssize_t k = 0; k < m; k++) {
            u[a] += alpha[F[k]] * B[F[k] * nz + a];
        }
    }
    for (Py_ssize_t a = 0; a < nz; a++) {
        w[a] = 0.0;
        for (Py_ssize_t c = 0; c < nz; c++) {
            w[a] += K_inv[a * nz + c] * u[c];
        }
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        g[k] = -TARGET(p, F[k]);
        for (Py_ssize_t a = 0; a < nz; a++) {
            g[k] += B[F[k] * nz + a] * w[a];
        }
    }
}

/*
 * A Gauss-Jordan pivot of the tableau T (rows x m, row-major) on T[r, q]: row r divided by
 * it, column q eliminated from the other rows.
 */
static void
tableau_pivot(double *T, Py_ssize_t m, Py_ssize_t rows, Py_ssize_t r, Py_ssize_t q)
{
    double piv = T[r * m + q];
    for (Py_ssize_t k = 0; k < m; k++) {
        T[r * m + k] /= piv;
    }
    T[r * m + q] = 1.0;
    for (Py_ssize_t a = 0; a < rows; a++) {
        double f = T[a * m + q];
        if (a != r && f != 0.0) {
            for (Py_ssize_t k = 0; k < m; k++) {
                T[a * m + k] -= f * T[r * m + k];
            }
            T[a * m + q] = 0.0;
        }
    }
}

/* Pivots of `shed_free`'s tableau before it is eliminated anew from the rows. */
#define REFRESH 64

/*
 * Null-space moves while more than Nz + 1 rows are free, from one elimination kept as
 * the simplex method's tableau; returns the moves made (at most max_moves), or -1 where
 * memory ran out.
 *
 * With m > Nz + 1 free rows the subproblem is singular: each move follows a null
 * vector of [B_F, y_F]^T, along which the dual objective is linear, to the first bound
 * it meets, and one row leaves the free set. Coordinate descent can leave hundreds of
 * rows more than the Nz + 1 of the solution free; `null_vector`, an elimination per
 * move, would cost O(Nz^2 m) for each. Here Gauss-Jordan elimination with complete
 * pivoting brings [B_F, y_F]^T to the tableau T = A_B^-1 [B_F, y_F]^T once (B: the
 * r <= Nz + 1 pivot columns, the basis), so each non-basic free row q has the null
 * vector d_q = 1, d_B = -T[:, q]; a move costs a pivot of T, O(Nz m), where a basic
 * row leaves (q takes its place) and nothing more where q does. Along null vectors
 * B_F^T alpha_F + v does not change, nor does the dual's gradient g_F = B_F K^-1 (B_F^T
 * alpha_F + v) - p_F, so row q's slope is its reduced cost g_q - g_B^T T[:, q]; the row
 * with the steepest one moves. The moves need not be exact: the free rows' alpha is
 * solved anew once at most Nz + 1 remain, and a leaving row is set to its bound
 * exactly. T is eliminated anew after REFRESH pivots, or before a pivot below 1e-8 of
 * its column's largest entry.
 */
static Py_ssize_t
shed_free(const double *B, const double *y, const double *p, const double *K_inv,
          const double *C, double *alpha, unsigned char *upper, unsigned char *is_free,
          Py_ssize_t N, Py_ssize_t nz, double *v, double *cy, Py_ssize_t max_moves)
{
    Py_ssize_t rows = nz + 1, moves = 0, m = 0;
    for (Py_ssize_t i = 0; i < N; i++) {
        m += is_free[i] != 0;
    }
    Py_ssize_t *F = (Py_ssize_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *basic = (Py_ssize_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *pivot_of = (Py_ssize_t *)malloc((size_t)rows * sizeof(Py_ssize_t));
    double *T = new_doubles(rows * m, 0), *g = new_doubles(m, 0);
    double *u = new_doubles(nz, 0), *w = new_doubles(nz, 0);
    if (F == NULL || basic == NULL || pivot_of == NULL || T == NULL || g == NULL
        || u == NULL || w == NULL) {
        moves = -1;
        goto done;
    }
    while (moves < max_moves) {
        m = 0;
        for (Py_ssize_t i = 0; i < N; i++) {
            if (is_free[i]) {
                F[m] = i;
                m += 1;
            }
        }
        if (m <= rows) {
            break;
        }
        /* the gradient on the free rows, constant along the moves */
        free_gradient(B, p, K_inv, alpha, F, m, nz, v, u, w, g);
        double big = 0.0;
        for (Py_ssize_t k = 0; k < m; k++) {
            Py_ssize_t i = F[k];
            for (Py_ssize_t a = 0; a < nz; a++) {
                T[a * m + k] = B[i * nz + a];
            }
            T[nz * m + k] = y[i];
            basic[k] = -1;
            for (Py_ssize_t a = 0; a < rows; a++) {
                big = PY_MAX(big, fabs(T[a * m + k]));
            }
        }
        /* Gauss-Jordan elimination with complete pivoting: the rows past the rank vanish */
        Py_ssize_t rank = 0;
        while (rank < rows) {
            Py_ssize_t pi = rank, pk = -1;
            for (Py_ssize_t a = rank; a < rows; a++) {
                for (Py_ssize_t k = 0; k < m; k++) {
                    if (basic[k] < 0 && (pk < 0 || fabs(T[a * m + k]) > fabs(T[pi * m + pk]))) {
                        pi = a;
                        pk = k;
                    }
                }
            }
            if (pk < 0 || !(fabs(T[pi * m + pk]) > 1e-12 * big)) {
                break;
            }
            for (Py_ssize_t k = 0; pi != rank && k < m; k++) {
                double t = T[rank * m + k];
                T[rank * m + k] = T[pi * m + k];
                T[pi * m + k] = t;
            }
            tableau_pivot(T, m, rows, rank, pk);
            basic[pk] = rank;
            pivot_of[rank] = pk;
            rank += 1;
        }
        Py_ssize_t live = m, pivots = 0;
        while (moves < max_moves && live > rows && pivots < REFRESH) {
            /* the non-basic free row of steepest slope */
            Py_ssize_t q = -1;
            double slope = 0.0;
            for (Py_ssize_t k = 0; k < m; k++) {
                if (basic[k] >= 0 || !is_free[F[k]]) {
                    continue;
                }
                double c = g[k];
                for (Py_ssize_t a = 0; a < rank; a++) {
                    c -= g[pivot_of[a]] * T[a * m + k];
                }
                if (q < 0 || fabs(c) > fabs(slope)) {
                    q = k;
                    slope = c;
                }
            }
            if (q < 0) {
                break;
            }
            double sign = slope > 0 ? -1.0 : 1.0, step = INFINITY;
            Py_ssize_t j = -1;
            for (Py_ssize_t a = -1; a < rank; a++) { /* ratio test over q and the basis */
                Py_ssize_t k = a < 0 ? q : pivot_of[a], i = F[k];
                double d = a < 0 ? sign : -sign * T[a * m + q], r;
                if (d > 1e-14 * C[i]) {
                    r = (C[i] - alpha[i]) / d;
                }
                else if (d < -1e-14 * C[i]) {
                    r = -alpha[i] / d;
                }
                else {
                    continue;
                }
                if (r < step) {
                    j = k;
                    step = r;
                }
            }
            if (j < 0 || !isfinite(step)) {
                goto done;
            }
            if (j != q) { /* a basic row leaves, q takes its place: check the pivot first */
                double top = 0.0;
                for (Py_ssize_t a = 0; a < rank; a++) {
                    top = PY_MAX(top, fabs(T[a * m + q]));
                }
                if (!(fabs(T[basic[j] * m + q]) >= 1e-8 * top)) {
                    break; /* eliminate anew from the rows */
                }
            }
            step = PY_MAX(step, 0.0);
            alpha[F[q]] += step * sign;
            for (Py_ssize_t a = 0; a < rank; a++) {
                alpha[F[pivot_of[a]]] -= step * sign * T[a * m + q];
            }
            Py_ssize_t i = F[j];
            is_free[i] = 0;
            /* the bound it met, exactly: d_j > 0 moves towards C_i */
            double d_j = j == q ? sign : -sign * T[basic[j] * m + q];
            if (d_j > 0) {
                alpha[i] = C[i];
                upper[i] = 1;
                *cy += C[i] * y[i];
                for (Py_ssize_t a = 0; a < nz; a++) {
                    v[a] += C[i] * B[i * nz + a];
                }
            }
            else {
                alpha[i] = 0.0;
            }
            moves += 1;
            live -= 1;
            if (j != q) { /* q takes the leaving row's place in the basis */
                Py_ssize_t a0 = basic[j];
                tableau_pivot(T, m, rank, a0, q);
                basic[j] = -1;
                basic[q] = a0;
                pivot_of[a0] = q;
                pivots += 1;
            }
        }
        if (pivots == 0 && live == m) {
            break; /* no move from a fresh elimination: the caller's null vector takes over */
        }
    }
done:
    free(F);
    free(basic);
    free(pivot_of);
    free(T);
    free(g);
    free(u);
    free(w);
    return moves;
}

/*
 * The Cholesky factor R (upper triangular, G = R^T R) of the Gram matrix
 * G = Phi_F Phi_F^T of the whitened free rows, kept across moves.
 *
 * `schur_solve` forms and factors G at every move, O(m^2 Nz) for m free rows.
 * Here a row that joins the free set appends a column (O(m Nz) for its inner
 * products, O(m^2) for a triangular solve), one that leaves deletes its column
 * and Givens rotations restore the triangle (O(m^2)); a move then costs
 * O(m (m + Nz)). G is positive definite only for m <= Nz rows in general
 * position: where a pivot vanishes the factor is dropped and `schur_solve`
 * answers, until the free set has shrunk below the size that failed. Every
 * solve is checked against the unreduced system (`kkt_solved`), so round-off
 * accumulated over many updates costs a rebuild, never a wrong answer.
 */
typedef struct {
    double *R;          /* cap x cap, row-major: its leading m x m block is the factor */
    double *work;       /* 5 cap + Nz scratch doubles for `gram_solve` */
    Py_ssize_t *point;  /* point[s]: the row in slot s (the factor's order, not F's) */
    Py_ssize_t *slot;   /* slot[i]: row i's slot, or -1 (N entries) */
    Py_ssize_t m, cap;
    int valid;          /* whether R factors G of the rows in the slots */
    Py_ssize_t failed;  /* while not valid: the free count at which it failed */
} Gram;

static int
gram_init(Gram *g, Py_ssize_t N, Py_ssize_t nz)
{
    g->cap = nz;
    g->m = 0;
    g->valid = 1;
    g->failed = 0;
    g->R = new_doubles(nz * nz, 0);
    g->work = new_doubles(6 * nz, 0);
    g->point = (Py_ssize_t *)malloc((size_t)(nz > 0 ? nz : 1) * sizeof(Py_ssize_t));
    g->slot = (Py_ssize_t *)malloc((size_t)(N > 0 ? N : 1) * sizeof(Py_ssize_t));
    if (g->R == NULL || g->work == NULL || g->point == NULL || g->slot == NULL) {
        return NO_MEMORY;
    }
    for (Py_ssize_t i = 0; i < N; i++) {
        g->slot[i] = -1;
    }
    return SOLVED;
}

static void
gram_free(Gram *g)
{
    free(g->R);
    free(g->work);
    free(g->point);
    free(g->slot);
}

/* Empty the factor; failed > 0 marks it unusable until fewer than `failed` rows are free. */
static void
gram_clear(Gram *g, Py_ssize_t failed)
{
    for (Py_ssize_t s = 0; s < g->m; s++) {
        g->slot[g->point[s]] = -1;
    }
    g->m = 0;
    g->valid = failed == 0;
    g->failed = failed;
}

/* Append row i (its whitened row Phi_i): FAILED where G would not be positive definite. */
static int
gram_append(Gram *g, const double *Phi, Py_ssize_t nz, Py_ssize_t i)
{
    Py_ssize_t m = g->m, cap = g->cap;
    if (m >= cap) {
        return FAILED;
    }
    const double *phi = Phi + i * nz;
    double *R = g->R, diag = 0.0, rest = 0.0;
    for (Py_ssize_t a = 0; a < nz; a++) {
        diag += phi[a] * phi[a];
    }
    for (Py_ssize_t k = 0; k < m; k++) { /* R^T c = Phi_F phi, into column m */
        const double *other = Phi + g->point[k] * nz;
        double t = 0.0;
        for (Py_ssize_t a = 0; a < nz; a++) {
            t += other[a] * phi[a];
        }
        for (Py_ssize_t l = 0; l < k; l++) {
            t -= R[l * cap + k] * R[l * cap + m];
        }
        R[k * cap + m] = t / R[k * cap + k];
        rest += R[k * cap + m] * R[k * cap + m];
    }
    double pivot = diag - rest;
    /* a pivot lost to cancellation leaves nothing to solve with */
    if (!(pivot > 1e-12 * diag) || !isfinite(pivot)) {
        return FAILED;
    }
    R[m * cap + m] = sqrt(pivot);
    g->point[m] = i;
    g->slot[i] = m;
    g->m = m + 1;
    return SOLVED;
}

/* Delete slot s: shift the later columns left, then rotate the subdiagonal away. */
static int
gram_delete(Gram *g, Py_ssize_t s)
{
    Py_ssize_t m = g->m, cap = g->cap;
    double *R = g->R;
    g->slot[g->point[s]] = -1;
    for (Py_ssize_t j = s; j < m - 1; j++) {
        for (Py_ssize_t l = 0; l <= j + 1; l++) {
            R[l * cap + j] = R[l * cap + j + 1];
        }
        g->point[j] = g->point[j + 1];
        g->slot[g->point[j]] = j;
    }
    for (Py_ssize_t j = s; j < m - 1; j++) {
        double a = R[j * cap + j], b = R[(j + 1) * cap + j], h = hypot(a, b);
        if (!(h > 0.0) || !isfinite(h)) {
            return FAILED;
        }
        double c = a / h, sn = b / h;
        for (Py_ssize_t l = j; l < m - 1; l++) {
            double top = R[j * cap + l], bottom = R[(j + 1) * cap + l];
            R[j * cap + l] = c * top + sn * bottom;
            R[(j + 1) * cap + l] = c * bottom - sn * top;
        }
    }
    g->m = m - 1;
    return SOLVED;
}

/* x = G^-1 r (m entries) by the two triangular solves with R; x may be r. */
static void
gram_apply_inverse(const Gram *g, const double *r, double *x)
{
    Py_ssize_t m = g->m, cap = g->cap;
    const double *R = g->R;
    for (Py_ssize_t k = 0; k < m; k++) {
        double t = r[k];
        for (Py_ssize_t l = 0; l < k; l++) {
            t -= R[l * cap + k] * x[l];
        }
        x[k] = t / R[k * cap + k];
    }
    for (Py_ssize_t k = m - 1; k >= 0; k--) {
        double t = x[k];
        for (Py_ssize_t l = k + 1; l < m; l++) {
            t -= R[k * cap + l] * x[l];
        }
        x[k] = t / R[k * cap + k];
    }
}

/* Bring the slots to the free rows F[:m]: FAILED where the factor cannot hold them. */
static int
gram_sync(Gram *g, const unsigned char *is_free, const Py_ssize_t *F, Py_ssize_t m,
          const double *Phi, Py_ssize_t nz)
{
    for (Py_ssize_t s = g->m - 1; s >= 0; s--) {
        if (!is_free[g->point[s]] && !gram_delete(g, s)) {
            return FAILED;
        }
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        if (g->slot[F[k]] < 0 && !gram_append(g, Phi, nz, F[k])) {
            return FAILED;
        }
    }
    return SOLVED;
}

/*
 * `schur_solve`'s system by the kept factor: with G = Phi_F Phi_F^T and
 * r = p_F - Phi_F L^-1 v, alpha_F = G^-1 (r - y_F b) and
 * b = (y_F^T G^-1 r + cy) / (y_F^T G^-1 y_F). FAILED (and `schur_solve`
 * answers) where the factor is unusable or its solution does not check.
 */
static int
gram_solve(Gram *g, const double *B, const double *y, const double *p, const Py_ssize_t *F,
           Py_ssize_t m, Py_ssize_t nz, const double *K, const double *L, const double *Phi,
           const unsigned char *is_free, const double *v, double cy, double scale, double *sol)
{
    /* one free row: the constraint alone gives alpha = -cy y, which `schur_solve`'s pivot
       on y reproduces to the last digit (it decides whether the row reaches its bound) */
    if (m < 2 || m > g->cap || (!g->valid && m >= g->failed)) {
        return FAILED;
    }
    int fresh = !g->valid;
    if (fresh) {
        gram_clear(g, 0);
    }
    while (1) {
        if (gram_sync(g, is_free, F, m, Phi, nz)) {
            double *u = g->work, *r = u + nz, *yy = r + g->cap, *x = yy + g->cap;
            double *z = x + g->cap;
            forward_substitution(L, v, u, nz);
            for (Py_ssize_t s = 0; s < m; s++) {
                Py_ssize_t i = g->point[s];
                double t = TARGET(p, i);
                for (Py_ssize_t a = 0; a < nz; a++) {
                    t -= Phi[i * nz + a] * u[a];
                }
                r[s] = t;
                yy[s] = y[i];
            }
            gram_apply_inverse(g, r, x);
            gram_apply_inverse(g, yy, z);
            double num = cy, den = 0.0;
            for (Py_ssize_t s = 0; s < m; s++) {
                num += yy[s] * x[s];
                den += yy[s] * z[s];
            }
            if (den > 0.0 && isfinite(num / den)) {
                double b = num / den;
                /* alpha_F = G^-1 (r - y_F b) solved anew, not x - b z, whose difference
                   can cancel the digits that decide whether a bound is met */
                for (Py_ssize_t s = 0; s < m; s++) {
                    r[s] -= yy[s] * b;
                }
                gram_apply_inverse(g, r, x);
                for (Py_ssize_t s = 0; s < m; s++) { /* L^-1 v + Phi_F^T alpha_F */
                    const double *phi = Phi + g->point[s] * nz;
                    for (Py_ssize_t a = 0; a < nz; a++) {
                        u[a] += x[s] * phi[a];
                    }
                }
                backward_substitution(L, u, sol, nz);
                sol[nz] = b;
                for (Py_ssize_t k = 0; k < m; k++) {
                    sol[nz + 1 + k] = x[g->slot[F[k]]];
                }
                if (kkt_solved(B, y, p, F, m, nz, K, v, cy, sol, scale)) {
                    return SOLVED;
                }
            }
        }
        if (fresh) { /* built from scratch and still no good: wait for a smaller free set */
            gram_clear(g, m);
            return FAILED;
        }
        fresh = 1; /* an updated factor may have drifted: rebuild it once */
        gram_clear(g, 0);
    }
}

/*
 * The moves of `_warm_active_set`.
 *
 * Updates alpha, upper and is_free (the free mask; `free` is C's) in place and
 * writes beta (Nz), *b_out and *kept_out (the moves `gram_solve` answered);
 * returns SOLVED where every KKT condition holds to tol within max_iter moves.
 * Non-finite values count as failure: no
 * floating-point error is raised here. B is N x Nz, K and K_inv Nz x Nz, L the
 * Cholesky factor of K or empty (nL = 0: every move solves the unreduced system).
 * v0 (Nz) and cy0 are sum_j C_j B_j and sum_j C_j y_j over points at their upper
 * bound that are not among the N rows (zero when all points are given), so that a
 * caller can polish a working set of the points. p (N) holds the rows' margin
 * targets, or is NULL: 1 for every row (the SVM).
 */
static int
active_set(const double *B, const double *y, const double *p, const double *K,
           const double *K_inv, const double *L, Py_ssize_t nL, const double *C, double *alpha,
           unsigned char *upper, unsigned char *is_free, Py_ssize_t N, Py_ssize_t nz,
           double tol, Py_ssize_t max_iter, const double *v0, double cy0, double *beta,
           double *b_out, Py_ssize_t *kept_out)
{
    double b = 0.0;
    *kept_out = 0;
    /* the bound points enter the subproblem only through these sums; each move updates
       them. They start from v0 and cy0: points at C_i held outside the rows given. */
    double cy = cy0, *v = new_doubles(nz, 1);
    double *d = new_doubles(N, 0), *null = new_doubles(N, 0);
    double *u = new_doubles(nz, 0), *w = new_doubles(nz, 0);
    double *sol = new_doubles(2 * nz + 2, 0); /* n = Nz + 1 + m <= 2 Nz + 2 when it solves */
    Py_ssize_t *F = (Py_ssize_t *)malloc((size_t)(N > 0 ? N : 1) * sizeof(Py_ssize_t));
    /* whitened rows Phi_i = L^-1 B_i^T of the points that have been free (no L: none) */
    double *Phi = nL ? new_doubles(N * nz, 0) : NULL;
    unsigned char *whitened = (unsigned char *)calloc((size_t)(N > 0 ? N : 1), 1);
    Gram gram = {NULL, NULL, NULL, NULL, 0, 0, 0, 0};
    int status = NO_MEMORY;
    if (v == NULL || d == NULL || null == NULL || u == NULL || w == NULL || sol == NULL
        || F == NULL || (nL && Phi == NULL) || whitened == NULL
        || (nL && gram_init(&gram, N, nz) != SOLVED)) {
        goto done;
    }
    status = FAILED;
    for (Py_ssize_t a = 0; a < nz; a++) {
        beta[a] = 0.0;
        v[a] = v0[a];
    }
    for (Py_ssize_t i = 0; i < N; i++) {
        if (upper[i]) {
            cy += C[i] * y[i];
            for (Py_ssize_t a = 0; a < nz; a++) {
                v[a] += C[i] * B[i * nz + a];
            }
        }
    }
    double scale = 0.0;
    for (Py_ssize_t i = 0; i < N; i++) {
        scale = PY_MAX(scale, C[i]);
    }
    for (Py_ssize_t iteration = 0; iteration < max_iter; iteration++) {
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < N; i++) {
            if (is_free[i]) {
                F[m] = i;
                m += 1;
            }
        }
        if (m > nz + 1) { /* singular: the null-space moves from one kept tableau */
            Py_ssize_t shed = shed_free(B, y, p, K_inv, C, alpha, upper, is_free, N, nz, v,
                                        &cy, max_iter - iteration);
            if (shed < 0) {
                status = NO_MEMORY;
                goto done;
            }
            if (shed > 0) {
                iteration += shed - 1;
                continue;
            }
        }
        int solved = FAILED;
        if (nL && m <= nz + 1) {
            for (Py_ssize_t k = 0; k < m; k++) {
                Py_ssize_t i = F[k];
                if (!whitened[i]) {
                    forward_substitution(L, B + i * nz, Phi + i * nz, nz);
                    whitened[i] = 1;
                }
            }
            solved = gram_solve(&gram, B, y, p, F, m, nz, K, L, Phi, is_free, v, cy, scale,
                                sol);
            *kept_out += solved == SOLVED;
            if (solved == FAILED) {
                solved = schur_solve(B, y, p, F, m, nz, K, L, Phi, v, cy, scale, sol);
            }
        }
        if (solved == FAILED) {
            solved = active_set_solve(B, y, p, F, m, nz, K, v, cy, scale, sol);
        }
        if (solved == NO_MEMORY) {
            status = NO_MEMORY;
            goto done;
        }
        if (solved) {
            for (Py_ssize_t a = 0; a < nz; a++) {
                beta[a] = sol[a];
            }
            b = sol[nz];
            for (Py_ssize_t k = 0; k < m; k++) {
                d[k] = sol[nz + 1 + k] - alpha[F[k]];
            }
        }
        else if (m == 0) { /* no margin point: b is not unique; the interior point copes */
            goto done;
        }
        else { /* singular subproblem: a direction of linear decrease */
            int ok = null_vector(B, y, F, m, nz, null);
            if (ok != SOLVED) {
                status = ok;
                goto done;
            }
            /* the dual objective's slope along it (d holds the gradient first) */
            free_gradient(B, p, K_inv, alpha, F, m, nz, v, u, w, d);
            double slope = 0.0;
            for (Py_ssize_t k = 0; k < m; k++) {
                slope += d[k] * null[k];
            }
            for (Py_ssize_t k = 0; k < m; k++) {
                d[k] = slope > 0 ? -null[k] : null[k];
            }
        }
        Py_ssize_t j = 0;
        double step = INFINITY;
        for (Py_ssize_t k = 0; k < m; k++) { /* ratio test: the first bound the step meets */
            Py_ssize_t i = F[k];
            double r;
            if (d[k] > 1e-14 * C[i]) {
                r = (C[i] - alpha[i]) / d[k];
            }
            else if (d[k] < -1e-14 * C[i]) {
                r = -alpha[i] / d[k];
            }
            else {
                continue;
            }
            if (r < step) {
                j = k;
                step = r;
            }
        }
        if (solved && step >= 1.0) {
            for (Py_ssize_t k = 0; k < m; k++) {
                alpha[F[k]] = sol[nz + 1 + k];
            }
            Py_ssize_t worst = -1;
            double violation = tol;
            for (Py_ssize_t i = 0; i < N; i++) {
                if (is_free[i]) {
                    continue;
                }
                double g = y[i] * b - TARGET(p, i); /* margin slack y_i(f_i + b) - p_i */
                for (Py_ssize_t a = 0; a < nz; a++) {
                    g += B[i * nz + a] * beta[a];
                }
                if (upper[i]) {
                    g = -g;
                }
                if (-g > violation) {
                    worst = i;
                    violation = -g;
                }
            }
            if (worst < 0) {
                status = SOLVED;
                goto done;
            }
            if (upper[worst]) {
                cy -= C[worst] * y[worst];
                for (Py_ssize_t a = 0; a < nz; a++) {
                    v[a] -= C[worst] * B[worst * nz + a];
                }
            }
            upper[worst] = 0;
            is_free[worst] = 1;
            continue;
        }
        if (!isfinite(step)) {
            goto done;
        }
        for (Py_ssize_t k = 0; k < m; k++) {
            alpha[F[k]] += step * d[k];
        }
        Py_ssize_t i = F[j];
        is_free[i] = 0;
        if (d[j] > 0) {
            alpha[i] = C[i];
            upper[i] = 1;
            cy += C[i] * y[i];
            for (Py_ssize_t a = 0; a < nz; a++) {
                v[a] += C[i] * B[i * nz + a];
            }
        }
        else {
            alpha[i] = 0.0;
        }
    }
done:
    *b_out = b;
    free(v);
    free(d);
    free(null);
    free(u);
    free(w);
    free(sol);
    free(F);
    free(Phi);
    free(whitened);
    gram_free(&gram);
    return status;
}

/* ------------------------------------------------------------ Python's side */

/*
 * F: int64 indices into B's rows, at least m of them, each in [0, N); a copy of
 * F[:m] as Py_ssize_t (which int64 need not be), to free, or NULL with an error.
 */
static Py_ssize_t *
take_indices(Held *held, const char *function, PyObject *obj, Py_ssize_t m, Py_ssize_t N)
{
    const int64_t *F = take(held, function, obj, "F", 'q', 0, 1, -1, -1, "(k,) with k >= m");
    if (F == NULL) {
        return NULL;
    }
    Py_ssize_t length = last_shape(held)[0];
    if (m < 0 || m > length) {
        PyErr_Format(PyExc_ValueError,
                     "The 'm' argument of %s must be an int in the range [0, %zd] (the length "
                     "of F). Got %zd instead.", function, length, m);
        return NULL;
    }
    Py_ssize_t *copy = (Py_ssize_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(Py_ssize_t));
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        if (F[k] < 0 || F[k] >= N) {
            PyErr_Format(PyExc_ValueError,
                         "The indices F[:m] of %s must lie in [0, %zd) (rows of B). "
                         "Got F[%zd] = %lld instead.", function, N, k, (long long)F[k]);
            free(copy);
            return NULL;
        }
        copy[k] = (Py_ssize_t)F[k];
    }
    return copy;
}

PyDoc_STRVAR(active_set_doc,
"active_set(B, y, K, K_inv, L, C, alpha, upper, free, beta, tol, max_iter, v0, cy0, p=None)\n"
"-> (ok, b, kept)\n\n"
"The moves of sparsify.svm_dual.solvers.warm_active_set. Arrays: B (N, Nz), y, C (N,),\n"
"K, K_inv (Nz, Nz), L (Nz, Nz) or (0, 0), all float64; alpha (N,) float64, upper and free\n"
"(N,) bool, updated in place; beta (Nz,) float64, written; v0 (Nz,) float64 and cy0, the\n"
"sums of C_j B_j and C_j y_j over points at C_j left out of B. Returns whether every KKT\n"
"condition holds to tol within max_iter moves, b, and how many moves the Cholesky factor\n"
"kept across moves solved. p (N,) float64: the rows' margin targets (None: 1 for every\n"
"row, the SVM). The GIL is released meanwhile.");

static PyObject *
py_active_set(PyObject *self, PyObject *args)
{
    static const char function[] = "active_set";
    PyObject *oB, *oy, *oK, *oK_inv, *oL, *oC, *oalpha, *oupper, *ofree, *obeta, *ov0;
    PyObject *op = Py_None, *result = NULL;
    const double *B, *y, *K, *K_inv, *L, *C, *v0, *p = NULL;
    double *alpha, *beta, tol, cy0, b = 0.0;
    unsigned char *upper, *is_free;
    Py_ssize_t max_iter, N, nz, nL, kept = 0;
    Held held = {.held = 0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOdnOd|O:active_set", &oB, &oy, &oK, &oK_inv, &oL,
                          &oC, &oalpha, &oupper, &ofree, &obeta, &tol, &max_iter, &ov0, &cy0,
                          &op)) {
        return NULL;
    }
    if ((B = take(&held, function, oB, "B", 'd', 0, 2, -1, -1, "(N, Nz)")) == NULL) {
        goto done;
    }
    N = last_shape(&held)[0];
    nz = last_shape(&held)[1];
    if ((y = take(&held, function, oy, "y", 'd', 0, 1, N, -1, NULL)) == NULL
        || (K = take(&held, function, oK, "K", 'd', 0, 2, nz, nz, NULL)) == NULL
        || (K_inv = take(&held, function, oK_inv, "K_inv", 'd', 0, 2, nz, nz, NULL)) == NULL
        || (L = take(&held, function, oL, "L", 'd', 0, 2, -1, -1,
                     "(Nz, Nz) or (0, 0)")) == NULL) {
        goto done;
    }
    nL = last_shape(&held)[0]; /* L: the Cholesky factor, or (0, 0) where there is none */
    if (!((nL == nz || nL == 0) && last_shape(&held)[1] == nL)) {
        PyErr_Format(PyExc_ValueError,
                     "The 'L' array of %s must have shape (%zd, %zd) or (0, 0). "
                     "Got shape (%zd, %zd) instead.", function, nz, nz, nL,
                     last_shape(&held)[1]);
        goto done;
    }
    if ((C = take(&held, function, oC, "C", 'd', 0, 1, N, -1, NULL)) == NULL
        || (alpha = take(&held, function, oalpha, "alpha", 'd', 1, 1, N, -1, NULL)) == NULL
        || (upper = take(&held, function, oupper, "upper", '?', 1, 1, N, -1, NULL)) == NULL
        || (is_free = take(&held, function, ofree, "free", '?', 1, 1, N, -1, NULL)) == NULL
        || (beta = take(&held, function, obeta, "beta", 'd', 1, 1, nz, -1, NULL)) == NULL
        || (v0 = take(&held, function, ov0, "v0", 'd', 0, 1, nz, -1, NULL)) == NULL
        || (op != Py_None
            && (p = take(&held, function, op, "p", 'd', 0, 1, N, -1, NULL)) == NULL)) {
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = active_set(B, y, p, K, K_inv, L, nL, C, alpha, upper, is_free, N, nz, tol,
                        max_iter, v0, cy0, beta, &b, &kept);
    Py_END_ALLOW_THREADS
    if (status == NO_MEMORY) {
        /* Phi and the null vector's matrix, N x Nz each, dominate: about twice B */
        double mb = 8.0 * (2.0 * (double)N * (double)(nz + 1) + 5.0 * (double)N
                           + 2.0 * (double)(2 * nz + 2) * (double)(2 * nz + 2)) / 1e6;
        PyErr_Format(PyExc_MemoryError,
                     "The SVM fast path's active set could not allocate its work arrays (about "
                     "%zd MB for N = %zd points and Nz = %zd). Free memory, or fit on fewer "
                     "points or with fewer expansion vectors.", (Py_ssize_t)(mb + 1.0), N, nz);
    }
    else {
        result = Py_BuildValue("(Odn)", status == SOLVED ? Py_True : Py_False, b, kept);
    }
done:
    release_all(&held);
    return result;
}

PyDoc_STRVAR(active_set_solve_doc,
"active_set_solve(B, y, F, m, K, v, cy, scale, sol) -> ok\n\n"
"[beta, b, alpha_F] for the partition with free points F[:m] (int64 row indices) written\n"
"into sol (Nz + 1 + m,), and whether its KKT system solved (for the tests). sol is zeroed\n"
"first; it stays zero where m > Nz + 1.");

static PyObject *
py_active_set_solve(PyObject *self, PyObject *args)
{
    static const char function[] = "active_set_solve";
    PyObject *oB, *oy, *oF, *oK, *ov, *osol, *result = NULL;
    const double *B, *y, *K, *v;
    double *sol, cy, scale;
    Py_ssize_t m, N, nz, *F = NULL;
    Held held = {.held = 0};
    if (!PyArg_ParseTuple(args, "OOOnOOddO:active_set_solve", &oB, &oy, &oF, &m, &oK, &ov, &cy,
                          &scale, &osol)) {
        return NULL;
    }
    if ((B = take(&held, function, oB, "B", 'd', 0, 2, -1, -1, "(N, Nz)")) == NULL) {
        goto done;
    }
    N = last_shape(&held)[0];
    nz = last_shape(&held)[1];
    if ((y = take(&held, function, oy, "y", 'd', 0, 1, N, -1, NULL)) == NULL
        || (F = take_indices(&held, function, oF, m, N)) == NULL
        || (K = take(&held, function, oK, "K", 'd', 0, 2, nz, nz, NULL)) == NULL
        || (v = take(&held, function, ov, "v", 'd', 0, 1, nz, -1, NULL)) == NULL
        || (sol = take(&held, function, osol, "sol", 'd', 1, 1, nz + 1 + m, -1,
                       NULL)) == NULL) {
        goto done;
    }
    memset(sol, 0, (size_t)(nz + 1 + m) * sizeof(double));
    int status = active_set_solve(B, y, NULL, F, m, nz, K, v, cy, scale, sol);
    result = status == NO_MEMORY ? PyErr_NoMemory() : PyBool_FromLong(status == SOLVED);
done:
    free(F);
    release_all(&held);
    return result;
}

PyDoc_STRVAR(null_vector_doc,
"null_vector(B, y, F, m, d) -> ok\n\n"
"A unit vector with [B_F, y_F]^T d ~ 0 for the m >= 1 free points F[:m] (int64 row\n"
"indices), written into d (m,), and whether it is finite (for the tests).");

static PyObject *
py_null_vector(PyObject *self, PyObject *args)
{
    static const char function[] = "null_vector";
    PyObject *oB, *oy, *oF, *od, *result = NULL;
    const double *B, *y;
    double *d;
    Py_ssize_t m, N, nz, *F = NULL;
    Held held = {.held = 0};
    if (!PyArg_ParseTuple(args, "OOOnO:null_vector", &oB, &oy, &oF, &m, &od)) {
        return NULL;
    }
    if (m < 1) {
        PyErr_Format(PyExc_ValueError,
                     "The 'm' argument of %s must be an int >= 1 (a null vector of no free "
                     "point is empty). Got %zd instead.", function, m);
        return NULL;
    }
    if ((B = take(&held, function, oB, "B", 'd', 0, 2, -1, -1, "(N, Nz)")) == NULL) {
        goto done;
    }
    N = last_shape(&held)[0];
    nz = last_shape(&held)[1];
    if ((y = take(&held, function, oy, "y", 'd', 0, 1, N, -1, NULL)) == NULL
        || (F = take_indices(&held, function, oF, m, N)) == NULL
        || (d = take(&held, function, od, "d", 'd', 1, 1, m, -1, NULL)) == NULL) {
        goto done;
    }
    int status = null_vector(B, y, F, m, nz, d);
    result = status == NO_MEMORY ? PyErr_NoMemory() : PyBool_FromLong(status == SOLVED);
done:
    free(F);
    release_all(&held);
    return result;
}

static PyMethodDef methods[] = {
    {"active_set", py_active_set, METH_VARARGS, active_set_doc},
    {"active_set_solve", py_active_set_solve, METH_VARARGS, active_set_solve_doc},
    {"null_vector", py_null_vector, METH_VARARGS, null_vector_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "sparsify.svm_dual._active_set",
    "The SVM fast path's active-set moves (see sparsify.svm_dual.solvers), in C.",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__active_set(void)
{
    return PyModule_Create(&module);
}
