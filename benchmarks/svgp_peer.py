"""A sparse variational GP classifier trained by minibatch: the speed peer of benchmarks/scale.py.

Run in a separate environment with torch and gpytorch (kept out of sparsify's own
dependencies); benchmarks/scale.py calls it as a subprocess with ``--gp-python``::

    /path/to/gp-env/bin/python benchmarks/svgp_peer.py data.npz result.json

``data.npz`` holds X, y (labels -1/+1), X_test, y_test, and the scalars M, gamma, epochs,
batch, lr and seed. The model is Hensman, Matthews & Ghahramani's (2015) SVGP in GPyTorch:
``ApproximateGP`` with ``VariationalStrategy(learn_inducing_locations=True)``,
``CholeskyVariationalDistribution``, ``ConstantMean``, ``ScaleKernel(RBFKernel())`` with
the lengthscale started at 1/sqrt(2γ) (then learned), ``BernoulliLikelihood``; M inducing
points started at random training points; Adam on minibatches of ``batch`` points, float32,
one torch thread. After each epoch the test accuracy is taken (outside the timed training),
so the time to reach a given accuracy can be read from ``result.json``: a list of
``{"epoch", "seconds", "accuracy"}`` with the training seconds accumulated so far; the
test points misclassified after the last epoch go to ``result.wrong.npy`` (their indices,
for benchmarks/scale.py's paired comparisons).
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import harness
import numpy as np


def main(data_path: str, out_path: str) -> int:
    import gpytorch
    import torch

    torch.set_num_threads(1)
    data = np.load(data_path)
    M, gamma = int(data["M"]), float(data["gamma"])
    epochs, batch = int(data["epochs"]), int(data["batch"])
    lr, seed = float(data["lr"]), int(data["seed"])
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    X = torch.from_numpy(np.ascontiguousarray(data["X"], dtype=np.float32))
    t = torch.from_numpy((data["y"] > 0).astype(np.float32))
    Xt = torch.from_numpy(np.ascontiguousarray(data["X_test"], dtype=np.float32))
    yt = data["y_test"] > 0
    inducing = X[torch.from_numpy(rng.choice(len(X), M, replace=False))].clone()

    class SVGP(gpytorch.models.ApproximateGP):  # type: ignore[misc]
        def __init__(self, Z: torch.Tensor) -> None:
            dist = gpytorch.variational.CholeskyVariationalDistribution(M)
            strategy = gpytorch.variational.VariationalStrategy(
                self, Z, dist, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    model = SVGP(inducing)
    model.covar_module.base_kernel.lengthscale = 1.0 / np.sqrt(2.0 * gamma)
    likelihood = gpytorch.likelihoods.BernoulliLikelihood()
    optimizer = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=lr)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(t))

    def wrong() -> np.ndarray:
        """The test points misclassified now."""
        model.eval()
        likelihood.eval()
        with torch.no_grad():
            prob = np.concatenate([likelihood(model(Xt[start:start + 8192])).mean.numpy()
                                   for start in range(0, len(Xt), 8192)])
        return np.flatnonzero((prob > 0.5) != yt).astype(np.int32)

    trace, seconds = [], 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        likelihood.train()
        start = time.perf_counter()
        order = torch.from_numpy(rng.permutation(len(X)))
        for k in range(0, len(X), batch):
            idx = order[k:k + batch]
            optimizer.zero_grad()
            loss = -mll(model(X[idx]), t[idx])
            loss.backward()
            optimizer.step()
        seconds += time.perf_counter() - start
        missed = wrong()
        trace.append({"epoch": epoch, "seconds": seconds,
                      "accuracy": 1 - len(missed) / len(Xt)})
    buffer = io.BytesIO()  # whole or not at all: the caller may stop this process
    np.save(buffer, missed)
    harness.write_atomic(Path(out_path).with_suffix(".wrong.npy"), buffer.getvalue())
    harness.write_atomic(Path(out_path), json.dumps(trace))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
