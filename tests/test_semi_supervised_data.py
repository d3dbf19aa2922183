"""The generators of the semi-supervised benchmarks and a smoke run of benchmarks/s3vm.py."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsify.datasets import labeled_split, make_g241c, make_g241d, make_two_moons
from tests.benchmark_helpers import load_benchmark

REPO = Path(__file__).resolve().parents[1]


# --- two moons -----------------------------------------------------------------------------


def test_two_moons_shape_balance_labels() -> None:
    X, y = make_two_moons(random_state=0)
    assert X.shape == (200, 2) and X.dtype == np.float64
    assert y.dtype == np.int64 and set(np.unique(y)) == {-1, 1}
    assert (y == 1).sum() == (y == -1).sum() == 100
    # shuffled, not sorted by class as make_moons returns them
    assert 0 < np.flatnonzero(y == 1).min() < 100


def test_two_moons_noise_and_geometry() -> None:
    X, y = make_two_moons(n_samples=400, noise=0.0, random_state=1)
    # without noise every point lies on its unit half circle
    upper = X[y == -1]
    lower = X[y == 1] - np.array([1.0, 0.5])
    np.testing.assert_allclose(np.linalg.norm(upper, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(lower, axis=1), 1.0)
    assert (upper[:, 1] >= -1e-12).all() and (lower[:, 1] <= 1e-12).all()
    noisy, _ = make_two_moons(n_samples=400, noise=0.3, random_state=1)
    assert np.abs(noisy - X).std() > 0.1


@pytest.mark.parametrize("maker", [make_two_moons, make_g241c, make_g241d])
def test_deterministic_under_random_state(maker) -> None:  # type: ignore[no-untyped-def]
    kw = {"n_samples": 40}
    X1, y1 = maker(random_state=3, **kw)
    X2, y2 = maker(random_state=np.random.RandomState(3), **kw)
    X3, _ = maker(random_state=4, **kw)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.allclose(X1, X3)


# --- g241c / g241d -------------------------------------------------------------------------


def test_g241c_shape_balance_and_centres() -> None:
    X, y, centers = make_g241c(random_state=0, return_centers=True)
    assert X.shape == (1500, 241) and centers.shape == (2, 241)
    assert (y == 1).sum() == (y == -1).sum() == 750
    assert np.linalg.norm(centers[1] - centers[0]) == pytest.approx(2.5, abs=1e-12)
    np.testing.assert_allclose(centers[0], -centers[1])
    # the class means estimate the centres: projected on the separating direction
    # they sit at ±1.25 (sd of a mean of 750 unit normals: 0.037)
    u = (centers[1] - centers[0]) / 2.5
    for label, c in ((-1, centers[0]), (1, centers[1])):
        Xc = X[y == label]
        assert (Xc.mean(0) - c) @ u == pytest.approx(0.0, abs=0.15)
        # unit variance in every direction: the residuals are isotropic standard normals
        assert (Xc - c).var() == pytest.approx(1.0, abs=0.02)
    # a random direction: not aligned with a coordinate axis
    assert np.abs(u).max() < 0.5


def test_g241c_centre_distance_is_the_bayes_margin() -> None:
    # The Bayes classifier sign(uᵀx) errs with probability Φ(−1.25) ≈ 0.106.
    X, y, c = make_g241c(n_samples=4000, random_state=5, return_centers=True)
    u = (c[1] - c[0]) / np.linalg.norm(c[1] - c[0])
    assert np.mean(np.sign(X @ u) != y) == pytest.approx(0.1056, abs=0.02)


def test_g241d_misleading_clusters() -> None:
    X, y, c = make_g241d(random_state=0, return_centers=True)
    assert X.shape == (1500, 241) and (y == 1).sum() == 750
    u = (c[0] - c[1]) / 6.0  # the direction of the clusters (within a class)
    v = (c[2] - c[0]) / 2.5  # the direction of the classes
    assert abs(u @ v) < 1e-12
    np.testing.assert_allclose(np.linalg.norm(c[3] - c[1]), 2.5)
    np.testing.assert_allclose(np.linalg.norm(c[2] - c[3]), 6.0)
    # 375 points per Gaussian: assign each point to its nearest centre
    d = ((X[:, None, :] - c[None]) ** 2).sum(-1)
    counts = np.bincount(d.argmin(1), minlength=4)
    assert np.all(np.abs(counts - 375) <= 10)
    # the widest gap (along u) splits each class in halves: it carries no label information,
    # while the class direction v does
    side = np.sign(X @ u)
    assert abs(np.mean(side[y == 1] > 0) - 0.5) < 0.06
    assert np.mean(np.sign(X @ v - (X @ v).mean()) == y) > 0.8


def test_generators_reject_bad_n_samples() -> None:
    with pytest.raises(ValueError, match="'n_samples' parameter of make_g241d"):
        make_g241d(n_samples=3)
    with pytest.raises(ValueError, match="'n_samples' parameter of make_g241c"):
        make_g241c(n_samples=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'noise' parameter"):
        make_two_moons(noise=-1)


# --- labeled_split -------------------------------------------------------------------------


def test_labeled_split_sizes_and_classes() -> None:
    y = np.array([-1] * 280 + [1] * 20)
    for seed in range(20):
        mask = labeled_split(y, 0.01, random_state=seed)
        assert mask.dtype == bool and mask.shape == y.shape
        assert mask.sum() == 3
        assert set(y[mask]) == {-1, 1}
    assert labeled_split(y, 7, random_state=0).sum() == 7
    np.testing.assert_array_equal(labeled_split(y, 0.1, 1), labeled_split(y, 0.1, 1))
    assert not np.array_equal(labeled_split(y, 0.1, 1), labeled_split(y, 0.1, 2))


def test_labeled_split_forces_a_rare_class() -> None:
    # one positive among 10000: rejection almost never draws it, the fallback forces it in
    y = np.array([0] * 9999 + [1])
    mask = labeled_split(y, 2, random_state=0)
    assert mask.sum() == 2 and mask[-1]


def test_labeled_split_is_uniform() -> None:
    y = np.tile([-1, 1], 10)
    hits = sum(labeled_split(y, 0.25, random_state=s).astype(int) for s in range(800))
    # every point is labeled with probability 5/20 (binomial sd ≈ 12)
    assert np.all(np.abs(hits - 200) < 60)


@pytest.mark.parametrize("ratio", [0.0, 1.0, 1.5, -0.1, 1, 300, True, "a"])
def test_labeled_split_rejects_bad_ratio(ratio) -> None:  # type: ignore[no-untyped-def]
    y = np.array([-1] * 150 + [1] * 150)
    with pytest.raises(ValueError, match="ratio"):
        labeled_split(y, ratio)


# --- the benchmark's data and a smoke run ---------------------------------------------------


def _benchmark_module():  # type: ignore[no-untyped-def]
    # (with benchmarks/ on the path for its import of harness: run alone, no other test
    # module has put it there)
    return load_benchmark("s3vm")


def test_benchmark_test_set_shares_the_training_distribution() -> None:
    bench = _benchmark_module()
    task = bench.make_task("g241c", None, 400, seed=0)
    assert task.X.shape == (1500, 241) and task.X_test.shape == (400, 241)
    assert (task.y_test == 1).sum() == 200
    # one scale factor: the training inputs have mean squared distance 1 to their centroid
    assert ((task.X - task.X.mean(0)) ** 2).sum(1).mean() == pytest.approx(1.0)
    # the direction between the training class means separates the test set as well as the
    # Bayes rule does (error Φ(−1.25) ≈ 10.6 %, plus estimation noise)
    u = task.X[task.y == 1].mean(0) - task.X[task.y == -1].mean(0)
    mid = (task.X[task.y == 1].mean(0) + task.X[task.y == -1].mean(0)) / 2
    assert np.mean(np.sign((task.X_test - mid) @ u) != task.y_test) < 0.2


def test_benchmark_skips_uspst_without_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SPARSIFY_DATA_DIR", raising=False)
    bench = _benchmark_module()
    assert bench.main(["--datasets", "uspst", "--out", str(tmp_path)]) == 1
    assert "uspst: skipped: no USPS data" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())



def test_benchmark_takes_any_binary_set_of_the_data_dir(tmp_path: Path) -> None:
    from tests.benchmark_helpers import write_set

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    write_set(tmp_path, "blobs", X, np.where(X[:, 0] > 0, 1, -1), n_train=200, n_splits=2)
    write_set(tmp_path, "three", X, np.arange(300) % 3, n_train=200, n_splits=1)
    bench = _benchmark_module()
    task = bench.make_task("blobs", tmp_path, 50, seed=0)
    assert task.X.shape == (200, 4) and task.X_test.shape == (50, 4)
    assert set(task.y) == {-1, 1} and bench.sigmas_of("blobs") == bench.OTHER_SIGMAS
    assert "first split of blobs.npz" in task.note
    assert "the S3VM is binary" in bench.make_task("three", tmp_path, 50, seed=0)
    assert "nor a set of --data-dir" in bench.make_task("nope", tmp_path, 50, seed=0)


def _have_estimator() -> bool:
    return importlib.util.find_spec("sparsify.algorithms.s3vm.estimator") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _have_estimator(), reason="needs sparsify.algorithms.s3vm.estimator")
def test_benchmark_smoke_two_moons(tmp_path: Path) -> None:
    cmd = [sys.executable, str(REPO / "benchmarks" / "s3vm.py"), "--datasets", "two_moons",
           "--labeled", "0.1", "--splits", "1", "--n-test", "200", "--out", str(tmp_path),
           "--quick"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "s3vm.md").read_text()
    assert "| two moons |" in page and "Partial results" not in page
    assert "S3VM below the supervised SVM, two moons, 0.1 labeled" in page
    with open(tmp_path / "s3vm.csv") as fh:
        rows = list(csv.DictReader(fh))
    methods = {r["method"] for r in rows}
    assert {"SVM (labeled only)", "LabelSpreading", "S3VM"} <= methods
    for r in rows:
        assert 0.0 <= float(r["transductive_error"]) <= 1.0
        assert 0.0 <= float(r["inductive_error"]) <= 1.0
        assert int(r["n_unlabeled"]) == 180
    assert not list(tmp_path.glob("*.tmp"))
