"""The structured interior point of the generic path (`sparsify.core.backends.structured`).

`cones`: the orthant's and second-order cones' arithmetic in NT scaling; `kkt`: the
linked problem's KKT systems solved at the cost of its structure (f eliminated by
the link, a Schur complement on u, small blocks); `ipm`: the predictor-corrector
iterations, one loop over a KKT system; `part`: a part's iterate and vector work (a
whole problem is one part); `parts`: a problem split by row blocks, its parts' sums.
"""
