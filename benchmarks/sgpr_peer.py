"""Sparse GP regression with M learned inducing points: the peer of benchmarks/regression.py.

Run in a separate environment with torch and gpytorch (kept out of sparsify's own
dependencies); benchmarks/regression.py calls it as a subprocess with ``--gp-python``::

    /path/to/gp-env/bin/python benchmarks/sgpr_peer.py data.npz result.npz

``data.npz`` holds X, y (standardised targets), X_test, Z0 (M initial inducing points), and the
scalars gamma, iters, lr and seed. The model is Titsias's (2009) SGPR (the collapsed variational
bound) in GPyTorch: ``ExactGP`` with ``InducingPointKernel(ScaleKernel(RBFKernel()))``,
``ConstantMean`` and a ``GaussianLikelihood``; the lengthscale starts at 1/sqrt(2γ) (γ of the
other methods' kernel), then the inducing points, kernel hyperparameters, mean and noise are all
learned by full-batch Adam (``iters`` steps at rate ``lr``) on the marginal likelihood, float64,
one torch thread. ``result.npz`` holds the predictive mean on X_test and the training seconds.
"""

from __future__ import annotations

import io
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
    gamma, iters, lr = float(data["gamma"]), int(data["iters"]), float(data["lr"])
    torch.manual_seed(int(data["seed"]))
    X = torch.from_numpy(np.ascontiguousarray(data["X"], dtype=np.float64))
    y = torch.from_numpy(np.ascontiguousarray(data["y"], dtype=np.float64))
    X_test = torch.from_numpy(np.ascontiguousarray(data["X_test"], dtype=np.float64))
    Z0 = torch.from_numpy(np.ascontiguousarray(data["Z0"], dtype=np.float64))

    class SGPR(gpytorch.models.ExactGP):  # type: ignore[misc]
        def __init__(self, likelihood: gpytorch.likelihoods.GaussianLikelihood) -> None:
            super().__init__(X, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            base = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
            base.base_kernel.lengthscale = 1.0 / np.sqrt(2.0 * gamma)
            self.covar_module = gpytorch.kernels.InducingPointKernel(
                base, inducing_points=Z0.clone(), likelihood=likelihood)

        def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = SGPR(likelihood).double()
    likelihood.double()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    start = time.perf_counter()
    model.train()
    likelihood.train()
    for _ in range(iters):
        optimizer.zero_grad()
        loss = -mll(model(X), y)
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    model.eval()
    likelihood.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        mean = torch.cat([model(X_test[k:k + 4096]).mean
                          for k in range(0, len(X_test), 4096)]).numpy()
    buffer = io.BytesIO()  # whole or not at all: the caller may stop this process
    np.savez(buffer, mean=mean, seconds=seconds, final_loss=float(loss.item()))
    harness.write_atomic(Path(out_path), buffer.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
