"""Four kernel algorithms new to sparsify, declared as a plugin by the contract of plugins.md.

Each uses one element of the contract beyond f and ‖w‖²:

- `SVOR`, support vector ordinal regression with implicit constraints (Chu & Keerthi 2005):
  the task "ordinal_regressor" and its M − 1 thresholds as ``Declaration.variables``;
- `RankSVM`, the pairwise ranking SVM (Herbrich et al. 2000; Joachims 2002): the task
  "ranker" and ``out.pairs``;
- `RobustLSSVM`, a weighted LS-SVM with Huber's loss (Suykens et al. 2002's weighted LS-SVM
  made robust by the loss itself): ``out.weights`` (``weighted = True``), so its estimator
  takes ``sample_weight``;
- `SVDD`, support vector data description (Tax & Duin 2004) written literally, ‖w‖² inside
  each constraint, with ``out.kernel_diagonal`` and ``diagonal_coef`` = −½ so that any kernel
  (a polynomial one) is right.

Register it with ``sparsify.register_plugin(contract_plugins)``; no estimator class is
written: each gets the one its task makes (`sparsify.core.estimator.estimator_for`).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from sparsify import Declaration, Formulation, hookimpl


class SVOR(Formulation):
    """SVOR: one hinge loss per point and threshold, the thresholds shared by all points."""

    name, task = "contract_svor", "ordinal_regressor"

    def __init__(self, C=1.0):
        self.C = C

    def declare(self, out):
        n, m = out.n_samples, int(np.max(out.y))  # levels 0..m: m thresholds
        theta = cp.Variable(m, name="thresholds")
        # +1 where the point's level is at most j (threshold j above it), −1 else
        sign = np.where(np.arange(m)[None, :] >= out.y[:, None], 1.0, -1.0)
        gap = cp.reshape(theta, (1, m), order="C") - cp.reshape(out.f, (n, 1), order="C")
        loss = cp.sum(cp.pos(1 - cp.multiply(sign, gap)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss),
                           variables={"thresholds": theta})


class RankSVM(Formulation):
    """The ranking SVM: a hinge loss on the score difference of each preference pair."""

    name, task = "contract_ranksvm", "ranker"

    def __init__(self, C=1.0):
        self.C = C

    def declare(self, out):
        better, worse = out.pairs[:, 0], out.pairs[:, 1]
        loss = cp.sum(cp.pos(1 - (out.f[better] - out.f[worse])))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss))


class RobustLSSVM(Formulation):
    """A weighted LS-SVM regressor with Huber's loss: squares below δ, linear beyond."""

    name, task, weighted = "contract_huber_lssvm", "regressor", True

    def __init__(self, C=10.0, delta=0.5):
        self.C, self.delta = C, delta

    def declare(self, out):
        b = cp.Variable(name="b")
        residual = out.y - out.f - b
        loss = cp.sum(cp.multiply(out.weights, cp.huber(residual, self.delta)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class SVDD(Formulation):
    """ν-SVDD as written: ‖φ(x_i) − a‖² = k(x_i, x_i) − 2 f_i + ‖w‖² ≤ R² + ξ_i.

    The objective is νN (R² + Σξ / (νN)), the same problem scaled by νN (a mean of
    losses declared times N, as docs/plugins.md advises); the decision function
    (R² − ‖φ(x) − a‖²)/2 = f(x) + (R² − ‖w‖²)/2 − k(x, x)/2 is positive inside the sphere.
    """

    name, task = "contract_svdd", "outlier_detector"

    def __init__(self, nu=0.2):
        self.nu = nu

    def declare(self, out):
        r2 = cp.Variable(name="r2")
        xi = cp.Variable(out.n_samples, name="xi")
        inside = [out.kernel_diagonal - 2 * out.f + out.norm_w2 <= r2 + xi, xi >= 0]
        objective = self.nu * out.n_samples * r2 + cp.sum(xi)
        return Declaration(cp.Minimize(objective), inside, intercept=(r2 - out.norm_w2) / 2,
                           variables={"r2": r2}, diagonal_coef=-0.5)


class ShiftedSVDD(SVDD):
    """The same SVDD with ‖w‖² moved into the objective by hand (ρ = R² − ‖w‖²): the
    reference of the literal form."""

    name = "contract_svdd_shifted"

    def declare(self, out):
        rho = cp.Variable(name="rho")
        outside = cp.sum(cp.pos(out.kernel_diagonal - 2 * out.f - rho))
        objective = self.nu * out.n_samples * (out.norm_w2 + rho) + outside
        return Declaration(cp.Minimize(objective), [], intercept=rho / 2,
                           variables={"r2": rho + out.norm_w2}, diagonal_coef=-0.5)


FORMULATIONS = (SVOR, RankSVM, RobustLSSVM, SVDD)


@hookimpl
def register_formulations(register):
    for cls in (*FORMULATIONS, ShiftedSVDD):
        register(cls)
