"""The structured interior point of the generic path (`sparsify.core.backends.structured`).

`cones`: the orthant's and second-order cones' arithmetic in NT scaling; `kkt`: the
linked problem's KKT systems solved at the cost of its structure (f eliminated by
the link, a Schur complement on u, small blocks); `ipm`: the predictor-corrector
iterations on them.
"""
