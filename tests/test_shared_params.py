"""The shared parameters come from one table (`sparsify.core.shared_params.SHARED`).

The built-in estimators' explicit constructors and their docstrings' shared entries
are written from it (``python -m sparsify.core.shared_params``); a plugin's
estimator gets its constructor made from it at class creation.
"""

from __future__ import annotations

import inspect

import pytest
from sklearn.base import clone

from sparsify.core.shared_params import SHARED, built_in_estimators, write_source


@pytest.mark.parametrize("cls", built_in_estimators(), ids=lambda c: c.__name__)
def test_the_constructor_and_docstring_are_what_the_table_writes(cls: type) -> None:
    assert not write_source(cls, check=True), (
        f"{cls.__name__}'s shared parameters differ from sparsify.core.shared_params.SHARED: "
        "run `python -m sparsify.core.shared_params` and commit the result.")


@pytest.mark.parametrize("cls", built_in_estimators(), ids=lambda c: c.__name__)
def test_signature_get_params_clone_and_help_see_every_shared_parameter(cls: type) -> None:
    signature = inspect.signature(cls)
    assert set(SHARED) <= set(signature.parameters)
    for name in SHARED:
        default = {**{n: p.default for n, p in SHARED.items()}, **cls.default_params}[name]
        assert signature.parameters[name].default == default
        assert f"    {name} : " in (cls.__doc__ or "")
    est = cls(verbose=2, tol=1e-3)
    params = est.get_params()
    assert params["verbose"] == 2 and params["tol"] == 1e-3
    assert clone(est).get_params() == params
    assert "verbose: int = 0" in inspect.getsource(cls.__init__)


def test_a_plugin_estimator_gets_the_same_table() -> None:
    import cvxpy as cp

    from sparsify import Declaration, Formulation
    from sparsify.core.regressor import SparseKernelRegressor

    class Ridge(Formulation):
        name = "shared_params_ridge"

        def __init__(self, alpha: float = 1.0) -> None:
            self.alpha = alpha

        def declare(self, out):  # type: ignore[no-untyped-def]
            b = cp.Variable()
            loss = cp.sum_squares(out.f + b - out.y)
            return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], b)

    class SparseRidge(SparseKernelRegressor):
        formulation_class = Ridge

    parameters = inspect.signature(SparseRidge).parameters
    # the table's defaults, and the task's own where it has one (a regressor runs past W's
    # sampling plateau: n_iter_no_change=None)
    assert {n: parameters[n].default for n in SHARED} == {
        **{n: p.default for n, p in SHARED.items()}, **SparseKernelRegressor.default_params}
    assert "    gamma : " in (SparseRidge.__doc__ or "")
