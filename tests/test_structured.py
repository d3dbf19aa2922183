"""The structured interior point: its cones, its KKT solves and its answers against Clarabel's."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from sparsify import RBF, ConicMarginal, Declaration, Formulation
from sparsify.core.backends import StructuredBackend
from sparsify.core.conic_data import ConeDims, ConicData, LinkedProblem, LinkLayout
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import random_problem
from sparsify.core.kernel_blocks import whitening
from sparsify.core.solvers import ConicResult, SolverBackend
from sparsify.core.structured import _blocks
from sparsify.core.structured.cones import Cones
from sparsify.core.structured.ipm import IPMSettings, solve
from sparsify.core.structured.kkt import KKTStructure, StructureError
from sparsify.plugins.registry import Entry, get_registry
from tests.test_declared_formulations import FORMULATIONS, declared

REGRESSION = {"svr", "eps_svr", "kridge", "quantile", "kernel_ridge"}
#: every built-in and declared formulation whose cones the structured backend takes
NAMES = ["svm", "kfd", "oneclass", "s3vm", "kernel_ridge", "svr", "eps_svr", "huber_svm", "kridge",
         "quantile", "nu_svm", "mpm", "ls_svm", "laprls", "crammer_singer"]


def _interior(cones: Cones, rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=cones.size)
    x[:cones.nonneg] = np.abs(x[:cones.nonneg]) + 0.1
    for _, rows in cones.groups:
        x[rows[:, 0]] = np.linalg.norm(x[rows[:, 1:]], axis=1) + rng.uniform(0.1, 1, len(rows))
    return x


def _dense(cones: Cones, apply) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.column_stack([apply(e) for e in np.eye(cones.size)])


@pytest.mark.parametrize("seed", range(5))
def test_the_nt_scaling_maps_z_and_s_to_one_point(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cones = Cones(3, (4, 2, 4, 5, 20))
    s, z = _interior(cones, rng), _interior(cones, rng)
    W = cones.scaling(s, z)
    np.testing.assert_allclose(W.apply(z), W.apply_inverse(s), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(W.lam, W.apply(z), rtol=1e-12, atol=1e-12)
    assert cones.min_eigenvalue(W.lam) > 0
    M, M_inv = _dense(cones, W.apply), _dense(cones, W.apply_inverse)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    np.testing.assert_allclose(M @ M_inv, np.eye(cones.size), atol=1e-10)
    # W² per cone: the dense blocks, and β²(I + a aᵀ − c cᵀ)
    M2 = M @ M
    for (rows, blocks), (_, beta, a, c) in zip(W.soc_blocks(), W.soc_low_rank(), strict=True):
        for r, block, b_, a_, c_ in zip(rows, blocks, beta, a, c, strict=True):
            np.testing.assert_allclose(M2[np.ix_(r, r)], block, rtol=1e-10, atol=1e-12)
            low = b_ ** 2 * (np.eye(len(r)) + np.outer(a_, a_) - np.outer(c_, c_))
            np.testing.assert_allclose(M2[np.ix_(r, r)], low, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_jordan_division_and_the_step_to_the_boundary(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cones = Cones(4, (3, 6))
    lam = _interior(cones, rng)
    r = rng.normal(size=cones.size)
    np.testing.assert_allclose(cones.jordan(lam, cones.jordan_divide(lam, r)), r, atol=1e-12)
    d = 3 * rng.normal(size=cones.size)
    alpha = cones.max_step(lam, d)
    assert abs(cones.min_eigenvalue(lam + alpha * d)) < 1e-9 * max(1.0, np.abs(d).max())
    assert cones.min_eigenvalue(lam + 0.999 * alpha * d) > 0
    assert cones.max_step(lam, np.abs(d) * 0 + cones.identity()) == np.inf


@pytest.mark.parametrize("size", [1, 2, 5, 9])
def test_packed_blocks_invert_and_apply_as_dense_algebra(size: int) -> None:
    rng = np.random.default_rng(size)
    count = 7
    full = rng.normal(size=(count, size, size))
    full = full + full.transpose(0, 2, 1)  # symmetric, indefinite (as a KKT block)
    i, j = np.tril_indices(size)
    packed = np.ascontiguousarray(full[:, i, j]).ravel()
    x = rng.normal(size=count * size)
    out = np.empty_like(x)
    _blocks.apply(packed, count, size, x, out)
    np.testing.assert_allclose(out, np.einsum("bij,bj->bi", full, x.reshape(count, size)).ravel(),
                               rtol=1e-12, atol=1e-12 * np.abs(full).max() * np.abs(x).max())
    singular = np.zeros(count, bool)
    assert _blocks.invert(packed, count, size, singular) == 0 and not singular.any()
    inverse = np.linalg.inv(full)
    # Gauss-Jordan with partial pivoting: backward stable, error ~ cond · ε
    bound = 1e-14 * np.linalg.cond(full).max() * np.abs(inverse).max() * size
    np.testing.assert_allclose(packed.reshape(count, -1), inverse[:, i, j], atol=bound)


def test_a_singular_packed_block_is_flagged() -> None:
    blocks = np.array([2.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # [[2, 0], [0, 0]] and [[1, 1], [1, 1]]
    singular = np.zeros(2, bool)
    assert _blocks.invert(blocks, 2, 2, singular) == 2 and singular.all()
    with pytest.raises(ValueError, match="blocks must hold"):
        _blocks.invert(np.zeros(4), 1, 2, np.zeros(1, bool))


class _Twice(Formulation):
    """A regression whose per-point equality rows are dependent: singular blocks."""

    name = "test_twice"
    task = "regressor"

    def declare(self, out):  # type: ignore[no-untyped-def]
        g, h = cp.Variable(out.n_samples), cp.Variable(out.n_samples)
        return Declaration(
            cp.Minimize(out.norm_w2 + cp.sum_squares(g - out.y) + cp.sum_squares(h)),
            [g + h == out.f, 2 * g + 2 * h == 2 * out.f])


def test_singular_blocks_are_regularised_and_refined_to_clarabels_answer(monkeypatch) -> None:
    from sparsify.core.structured import kkt

    regularised = []
    invert = kkt.KKTFactor._invert

    def spy(self, flat, again):  # type: ignore[no-untyped-def]
        invert(self, flat, again)
        regularised.append(self.regularised)

    monkeypatch.setattr(kkt.KKTFactor, "_invert", spy)
    X, _ = random_problem(60, 2)
    y = np.sin(X[:, 0])
    Z = X[:4] + 0.1
    mine = ConicMarginal(_Twice(), X, y, RBF(1.0), 4, solver="structured").evaluate(Z)
    reference = ConicMarginal(_Twice(), X, y, RBF(1.0), 4, solver="clarabel").evaluate(Z)
    assert regularised and all(regularised)
    assert mine.value == pytest.approx(reference.value, rel=1e-9)
    np.testing.assert_allclose(mine.grad, reference.grad, rtol=1e-6,
                               atol=1e-9 * np.abs(reference.grad).max())


def _linked(name: str, seed: int = 0, N: int = 30, Nz: int = 4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 3))
    y = (np.sin(X[:, 0]) if name in REGRESSION
         else np.where(X[:, 0] + 0.3 * rng.normal(size=N) > 0, 1, -1))
    form = FORMULATIONS[name]() if name in FORMULATIONS else make_formulation(name)
    if name in ("laprls", "crammer_singer"):  # their own data: unlabelled points, 3 classes
        X, y = declared.example_data(form, N, seed)
    m = ConicMarginal(form, X, y, RBF(0.5), Nz, solver="clarabel")
    problem = m._compiled["CLARABEL"].problem
    Z = X[rng.choice(N, Nz, replace=False)] + 0.1
    K_xz, K_zz = RBF(0.5)(X, Z), RBF(0.5)(Z, Z) + m.jitter * np.eye(Nz)
    problem.set_phi(K_xz @ whitening(K_zz))
    return m, problem, K_xz, K_zz


@pytest.mark.parametrize("name", NAMES)
def test_a_structured_kkt_solve_is_the_dense_one(name: str) -> None:
    rng = np.random.default_rng(1)
    _, problem, _, _ = _linked(name)
    own, layout = problem.own, problem.layout
    cones = Cones(own.cones.nonneg, own.cones.soc)
    structure = KKTStructure(own.P, own.A, own.cones.zero, cones, layout)
    scaling = cones.scaling(_interior(cones, rng), _interior(cones, rng)) if cones.size else None
    factor = structure.factor(problem.Phi, scaling)
    linked = problem.linked()
    D = np.zeros((linked.A.shape[0],) * 2)
    zero = linked.cones.zero
    if scaling is not None:
        D[zero:, zero:] = _dense(cones, scaling.squared)
    P = np.zeros((own.n, own.n)) if own.P is None else own.P.toarray()
    A = linked.A.toarray()
    kkt = np.block([[P, A.T], [A, -D]])
    rhs = rng.normal(size=len(kkt))
    n, n_f = own.n, problem.link_rows
    x, nu, y = factor.solve(rhs[:n], rhs[n:n + n_f], rhs[n + n_f:])
    mine = np.concatenate([x, nu, y])
    # the KKT matrices here have condition numbers below 1e4
    assert np.linalg.cond(kkt) < 1e4
    np.testing.assert_allclose(mine, np.linalg.solve(kkt, rhs), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.concatenate(factor.matvec(x, nu, y)), kkt @ mine,
                               atol=1e-10 * np.abs(kkt @ mine).max())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", range(3))
def test_the_interior_point_answers_as_clarabel_does(name: str, seed: int) -> None:
    m, problem, K_xz, K_zz = _linked(name, seed)
    own = problem.own
    cones = Cones(own.cones.nonneg, own.cones.soc)
    structure = KKTStructure(own.P, own.A, own.cones.zero, cones, problem.layout)
    result = solve(structure, own.c, own.b, problem.Phi,
                   IPMSettings(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-9))
    assert result.status == "optimal", result.history
    x = result.point.x
    value = own.c @ x + (0.5 * x @ (own.P @ x) if own.P is not None else 0) + own.offset
    reference = m._solve_links(K_xz, K_zz)  # Clarabel at tol 1e-9, aimed at 1e-11
    assert value == pytest.approx(reference.value, rel=1e-9, abs=1e-9)
    if cones.size == 0:
        assert result.iterations == 1  # an equality-constrained QP: one Newton step


def test_a_smooth_formulation_is_one_newton_step() -> None:
    _, problem, _, _ = _linked("kridge")
    own = problem.own
    assert own.cones.kinds == {"zero"}
    structure = KKTStructure(own.P, own.A, own.cones.zero, Cones(0), problem.layout)
    result = solve(structure, own.c, own.b, problem.Phi)
    assert result.status == "optimal" and result.iterations == 1
    assert result.primal_residual < 1e-12 and result.dual_residual < 1e-12


def test_a_point_separable_loss_splits_into_one_block_per_point() -> None:
    _, problem, _, _ = _linked("eps_svr", N=200)
    own = problem.own
    structure = KKTStructure(own.P, own.A, own.cones.zero,
                             Cones(own.cones.nonneg, own.cones.soc), problem.layout)
    # the intercept's column is dense: it joins u in the Schur complement
    assert len(structure.glob) == 1
    assert [(s, len(nodes)) for s, _, nodes in structure.groups] == [(4, 200)]


class _Chain(Formulation):
    """A formulation whose own variables form a chain over all points (not through f)."""

    name = "test_chain"

    def declare(self, out):  # type: ignore[no-untyped-def]
        g = cp.Variable(out.n_samples)
        smooth = cp.sum_squares(g[1:] - g[:-1])
        return Declaration(cp.Minimize(out.norm_w2 + cp.sum_squares(out.f - g) + smooth))


def test_own_variables_that_stay_coupled_go_to_the_next_backend() -> None:
    X, y = random_problem(300, 2)
    with pytest.raises(ValueError, match=r"No solver given can take the 'test_chain' "
                       r"formulation: structured: the formulation's own variables stay coupled "
                       r"in blocks of up to \d+ unknowns"):
        ConicMarginal(_Chain(), X, y.astype(float), RBF(1.0), 3, solver="structured")
    auto = ConicMarginal(_Chain(), X, y.astype(float), RBF(1.0), 3)
    assert auto.evaluate(X[:3]).solver == "clarabel"


class _DenseKKT(SolverBackend):
    """A third-party backend: equality-constrained QPs by one dense KKT solve."""

    cones = frozenset({"zero"})

    def solve(self, problem, attempt):  # type: ignore[no-untyped-def]
        data = problem.linked()
        P = data.P.toarray() if data.P is not None else np.zeros((data.n, data.n))
        A = data.A.toarray()
        kkt = np.block([[P, A.T], [A, np.zeros((len(A), len(A)))]])
        sol = np.linalg.lstsq(kkt, np.concatenate([-data.c, data.b]), rcond=None)[0]
        return ConicResult(cp.OPTIMAL, sol[:data.n], sol[data.n:])


def test_a_registered_backend_serves_the_generic_path(monkeypatch) -> None:
    entries = get_registry().entries
    backend = _DenseKKT("dense_kkt")
    monkeypatch.setitem(entries["solver"], "dense_kkt",
                        Entry("solver", "dense_kkt", backend, "tests", "tests"))
    X, y = random_problem(40, 2)
    y = np.sin(X[:, 0])
    form = FORMULATIONS["kridge"]()
    Z = X[:4] + 0.1
    mine = ConicMarginal(form, X, y, RBF(1.0), 4, solver="dense_kkt").evaluate(Z)
    reference = ConicMarginal(form, X, y, RBF(1.0), 4, solver="clarabel").evaluate(Z)
    assert mine.solver == "dense_kkt"
    assert mine.value == pytest.approx(reference.value, rel=1e-9)
    np.testing.assert_allclose(mine.grad, reference.grad, rtol=1e-6,
                               atol=1e-9 * np.abs(reference.grad).max())
    # a problem with cones it does not take is refused with the reason
    with pytest.raises(ValueError, match=r"dense_kkt: it handles zero cones only, and the "
                                         r"problem has nonneg ones"):
        ConicMarginal(make_formulation("svm"), X, np.sign(y), RBF(1.0), 4, solver="dense_kkt")


def test_a_warm_start_reaches_the_same_answer() -> None:
    X, y = random_problem(200, 3)
    form = FORMULATIONS["huber_svm"]()
    Z = X[:6] + 0.1
    cold = ConicMarginal(form, X, y, RBF(0.5), 6, solver="structured")
    warm = ConicMarginal(form, X, y, RBF(0.5), 6, solver="structured")
    warm.backends = [StructuredBackend("structured", settings={"warm_start": True})]
    for shift in (0.0, 0.01, 0.02):
        a, b = cold.evaluate(Z + shift), warm.evaluate(Z + shift)
        assert b.value == pytest.approx(a.value, rel=1e-9)
        np.testing.assert_allclose(b.grad, a.grad, rtol=1e-6, atol=1e-9 * np.abs(a.grad).max())


def test_the_structured_backend_estimates_its_memory_from_the_compiled_problem() -> None:
    X, y = random_problem(300, 2)
    marginal = ConicMarginal(FORMULATIONS["huber_svm"](), X, y, RBF(1.0), 5, solver="structured")
    problem = marginal._compiled["CLARABEL"].problem
    need = StructuredBackend("structured").memory(problem)
    structure = problem.cache["structured"]["structure"]
    assert need >= 8 * structure.block_entries + 8 * 300 * 5
    from sparsify.core.errors import MemoryEstimateError

    with pytest.raises(MemoryEstimateError, match=r"The generic path for the 'huber_svm' "
                       r"formulation with N=300, Nz=5: no backend fits: structured: it would "
                       r"need about .* [kMG]iB"):
        ConicMarginal(FORMULATIONS["huber_svm"](), X, y, RBF(1.0), 5, solver="structured",
                      max_memory=need - 1)


def test_conic_data_reads_every_layout_alike() -> None:
    x = cp.Variable(3)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x) - x[0]),
                         [x >= 0, cp.sum(x) == 1, cp.norm(x[:2]) <= 2])
    from sparsify.core.conic_data import read_problem_data

    data = read_problem_data(cp.CLARABEL, problem.get_problem_data(cp.CLARABEL)[0])
    assert (data.cones.zero, data.cones.soc) == (1, (3,)) and data.cones.nonneg >= 3
    assert data.cones.kinds == {"zero", "nonneg", "soc"}
    assert isinstance(data, ConicData) and data.P is not None
    np.testing.assert_allclose(data.P.toarray(), data.P.toarray().T)
    ecos = read_problem_data(cp.ECOS, problem.get_problem_data(cp.ECOS)[0])
    assert ecos.P is None and ecos.cones.zero == 1


def test_the_link_layout_and_the_written_link_agree() -> None:
    layout = LinkLayout(n=6, off_f=0, off_u=4, N=4, Nz=2)
    own = ConicData(None, np.zeros(6), sp.csc_matrix((0, 6)), np.zeros(0), ConeDims(zero=0))
    problem = LinkedProblem(own, layout)
    Phi = np.arange(8.0).reshape(4, 2)
    problem.set_phi(Phi)
    A = problem.linked().A.toarray()
    np.testing.assert_allclose(A[:, :4], np.eye(4))
    np.testing.assert_allclose(A[:, 4:], -Phi)
    problem.set_phi(2 * Phi)  # written in place
    np.testing.assert_allclose(problem.linked().A.toarray()[:, 4:], -2 * Phi)


def test_a_structure_error_is_a_value_error() -> None:
    assert issubclass(StructureError, ValueError)
