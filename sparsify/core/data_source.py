"""Where a fit's training rows are: in memory, or in row blocks on a Dask cluster.

The fit driver (`sparsify.core.estimator.SparseKernelEstimator`) asks its data
source four things: its size, the classes of y and their counts, the variance of
X (for ``gamma="scale"``) and initial rows (for ``init``: `InMemoryRows.initial_rows`,
or over row blocks `BlockProblem.initial_rows`). `InMemoryRows` answers from numpy
arrays; `RowBlocks` from Dask collections whose rows stay on the workers, with only
numbers and the drawn rows coming back. Each binary problem
(or the one regression problem) over row blocks is a `RowTarget`; a formulation
whose marginal accepts row blocks turns it into a `BlockProblem`
(`sparsify.core.formulation.Formulation.row_blocks`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.labels import check_class_count
from sparsify.core.memory import check_memory
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.validation import is_dask_collection, validate_rows

if TYPE_CHECKING:
    from sparsify.core.marginal import Marginal

__all__ = ["BlockProblem", "DataSource", "InMemoryRows", "RowBlocks", "RowTarget",
           "as_dask_array", "check_worker_memory", "draw_rows", "is_dask_collection",
           "payload_bytes", "validate_rows"]


Array = NDArray[np.float64]


class DataSource(ABC):
    """The training rows of one fit, wherever they are.

    Attributes
    ----------
    n_samples, n_features : int
    """

    n_samples: int
    n_features: int

    @abstractmethod
    def classes(self) -> tuple[NDArray[Any], NDArray[np.intp]]:
        """The sorted labels of y and the number of rows of each."""

    @abstractmethod
    def variance(self, weights: Array | None = None) -> float:
        """Var(X) over every entry, with row ``weights`` counting as repeats of the row."""


class InMemoryRows(DataSource):
    """Rows held as numpy arrays on this machine.

    Examples
    --------
    >>> rows = InMemoryRows(np.array([[0.0], [1.0], [3.0]]), np.array([1, 0, 1]))
    >>> rows.classes()[1].tolist(), rows.variance()
    ([1, 2], 1.5555555555555556)
    """

    def __init__(self, X: Array, y: NDArray[Any] | None = None) -> None:
        self.X, self.y = X, y
        self.n_samples, self.n_features = X.shape

    def classes(self) -> tuple[NDArray[Any], NDArray[np.intp]]:
        assert self.y is not None
        labels, counts = np.unique(self.y, return_counts=True)
        return labels, counts

    def variance(self, weights: Array | None = None) -> float:
        if weights is None:
            return float(np.var(self.X)) if np.size(self.X) else 0.0
        w = weights / weights.sum()
        mean = float(w @ self.X.mean(axis=1))
        return float(w @ ((self.X - mean) ** 2).mean(axis=1))

    def initial_rows(self, n: int, method: str, seed: int,
                     target: NDArray[Any] | None = None) -> Array:
        """`sparsify.core.optimize.initial_expansion_vectors` on these rows."""
        return initial_expansion_vectors(self.X, n, method, seed, y=target)


@dataclass
class RowTarget:
    """One problem over row blocks: what its targets and costs are, per row.

    Attributes
    ----------
    positive : label or None
        The label of class +1 (the others are −1); None: y itself (real targets).
    label_weights : dict
        Each label's factor of its rows' costs (labels left out weigh 1).
    row_weight : dask array or None
        A factor per row (0 leaves a row out); None: ones.
    """

    positive: Any = None
    label_weights: dict[Any, float] = field(default_factory=dict)
    row_weight: Any = None


class BlockProblem(ABC):
    """One problem's rows on the workers, in the form its formulation's marginal reads.

    Made by `sparsify.core.formulation.Formulation.row_blocks`; the fit driver
    draws each start's initial rows and makes each start's marginal from it, and
    closes it when the problem's starts are done.
    """

    @abstractmethod
    def marginal(self) -> Marginal:
        """A marginal over these blocks for one start."""

    @abstractmethod
    def initial_rows(self, n: int, balanced: bool, seed: int) -> Array:
        """``n`` rows drawn at random (with ``balanced``, evenly from the classes of a
        classification problem); rows of weight 0 are never drawn."""

    @abstractmethod
    def close(self) -> None:
        """Release the blocks on the workers."""


def payload_bytes(obj: Any) -> int:
    """The payload size of arrays and numbers in nested tuples and lists (what a map over
    row blocks sends and receives, Dask's own messages not counted).

    Examples
    --------
    >>> payload_bytes((np.zeros(3), [1.0, 2]))
    40
    """
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (list, tuple)):
        return sum(payload_bytes(item) for item in obj)
    if isinstance(obj, (float, int, np.floating, np.integer, bool)):
        return 8
    return 0


def check_worker_memory(client: Any, needs: Iterable[tuple[str | None, int]],
                        what: str) -> None:
    """Refuse, before any block is made, where the blocks a worker holds exceed its memory.

    ``needs`` gives each block's worker (None where not known: the blocks are then
    dealt evenly over the workers) and its bytes; ``what`` names the blocks, with a
    ``{worker}`` field for the worker's address. What a worker may use is the part
    of its memory limit below which Dask lets it run (``distributed.worker.memory.pause``,
    else ``terminate``, else 95 %), less what its process holds already (its rows
    among it). A worker without a memory limit is not checked.
    """
    workers = client.scheduler_info().get("workers", {})
    total: dict[str, int] = {}
    unplaced = 0
    for worker, need in needs:
        if worker is not None and worker in workers:
            total[worker] = total.get(worker, 0) + need
        else:
            unplaced += need
    for address in workers:  # blocks not placed yet: an even share each, at least
        total[address] = total.get(address, 0) + unplaced // max(1, len(workers))
    fraction = _usable_fraction(client)
    for address, need in total.items():
        info = workers.get(address, {})
        limit = int(info.get("memory_limit") or 0)
        if not limit:
            continue
        used = int((info.get("metrics") or {}).get("memory") or 0)
        usable = max(0, int(fraction * limit) - used)
        check_memory(need, what.format(worker=address),
                     f"(Dask pauses a worker at {fraction:.0%} of its {limit / 2**30:.2g} GiB "
                     f"limit, and its process holds {used / 2**30:.2g} GiB already.) Use more "
                     "workers, more memory per worker, smaller row blocks spread over more "
                     "workers, or fewer XVs.", limit=usable)


def _usable_fraction(client: Any) -> float:
    """The fraction of its memory limit a Dask worker may fill before it pauses or is ended."""
    try:
        import dask

        for key in ("distributed.worker.memory.pause", "distributed.worker.memory.terminate"):
            value = dask.config.get(key, default=None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
                return float(value)
    except ImportError:
        pass
    return 0.95


def draw_rows(sample: Callable[[Any, int, NDArray[np.int64]], list[tuple[Array, int]]],
              n_blocks: int, n: int, groups: list[Any], seed: int) -> Array:
    """``n`` rows drawn uniformly from row blocks, dealt as evenly as their order allows
    over ``groups`` (``[None]``: every row).

    ``sample(group, count, seeds)`` asks every block k (with seed ``seeds[k]``) for
    at most ``count`` random rows of ``group`` and how many it has; the driver draws
    from that pool with each row weighted by its block's count over the rows sent,
    which is a uniform draw over the group's rows. Only those rows travel.
    """
    rng = np.random.default_rng(seed)
    wanted = [n // len(groups) + (k < n % len(groups)) for k in range(len(groups))]
    chosen = []
    for group, count in zip(groups, wanted, strict=True):
        if count == 0:
            continue
        parts = sample(group, count, rng.integers(np.iinfo(np.int32).max, size=n_blocks))
        pool = np.vstack([rows for rows, _ in parts if len(rows)])
        weight = np.concatenate([np.full(len(rows), c / len(rows))
                                 for rows, c in parts if len(rows)])
        if len(pool) < count:
            raise ValueError(f"n_expansion={n} asks for {count} XVs from "
                             f"{'the data' if group is None else f'class {group!r}'}, which "
                             f"has {len(pool)} rows; use fewer XVs.")
        chosen.append(pool[rng.choice(len(pool), count, replace=False, p=weight / weight.sum())])
    return np.vstack(chosen)


def _check_numeric_columns(X: Any, owner: str) -> None:
    """Name the columns of a Dask DataFrame that are not numbers, before anything is computed."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(dtypes, "items"):
        return
    text = [str(name) for name, dtype in dtypes.items()
            if getattr(dtype, "kind", "O") not in "biuf"]
    if text:
        raise ValueError(f"X passed to {owner}.fit has columns that are not numbers: "
                         f"{', '.join(text[:5])}{', ...' if len(text) > 5 else ''}; features "
                         "must be numbers: convert those columns (categories to codes) or drop "
                         "them (X.drop(columns=[...])).")


def as_dask_array(data: Any, name: str) -> Any:
    """A dask array from a dask array, DataFrame or Series, with known chunk sizes."""
    import dask.array as da

    if hasattr(data, "to_dask_array"):  # a dask DataFrame or Series
        data = data.to_dask_array(lengths=True)
    if not isinstance(data, da.Array):
        raise TypeError(f"{name} must be a dask array, DataFrame or Series when the other "
                        f"one is; got {type(data).__name__}.")
    if any(np.isnan(c) for chunks in data.chunks for c in chunks):
        data = data.compute_chunk_sizes()
    return data


class RowBlocks(DataSource):
    """Rows in the row blocks of Dask collections, held by the workers of a Client.

    Only numbers (counts, sums) and drawn rows come back to the driver; `collect`
    brings the rows themselves, for what needs them all in one place (a full
    model for a ratio ``n_expansion``), after checking they fit this machine.

    Parameters
    ----------
    X : dask array, DataFrame
    y : dask array, Series or None
    owner : str
        The estimator's name, for messages.
    """

    def __init__(self, X: Any, y: Any, owner: str) -> None:
        try:
            from distributed import get_client

            self.client = get_client()
        except (ImportError, ValueError) as error:
            raise ValueError(f"{owner}.fit on dask collections needs a dask.distributed "
                             "Client: create one first (Client(...) or "
                             "Client(LocalCluster())), or pass numpy arrays.") from error
        _check_numeric_columns(X, owner)
        self.X = as_dask_array(X, "X")
        self.y = None if y is None else as_dask_array(y, "y")
        if self.X.dtype.kind not in "biuf":
            raise ValueError(f"X passed to {owner}.fit has dtype {self.X.dtype}; features must be "
                             "numbers (convert or drop the columns of text).")
        if (self.X.ndim != 2 or (self.y is not None and (
                self.y.ndim != 1 or self.X.shape[0] != self.y.shape[0]))):
            raise ValueError(f"{owner}.fit needs X of shape (n_samples, n_features) and y of "
                             f"shape (n_samples,); got {self.X.shape} and "
                             f"{None if self.y is None else self.y.shape}.")
        self.X = self.X.rechunk({1: -1})
        if self.y is not None:
            self.y = self.y.rechunk((self.X.chunks[0],))
        import dask.array as da

        # one pass over the blocks, as the in-memory fit's check_array makes over X
        if not bool(da.isfinite(self.X).all().compute()):
            raise ValueError(f"X passed to {owner}.fit contains NaN or infinity; remove or "
                             "impute those values.")
        self.owner = owner
        self.n_samples, self.n_features = (int(n) for n in self.X.shape)
        self.rows: InMemoryRows | None = None

    def classes(self) -> tuple[NDArray[Any], NDArray[np.intp]]:
        import dask.array as da

        assert self.y is not None
        labels, counts = (np.asarray(a) for a in
                          da.compute(*da.unique(self.y, return_counts=True)))
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            raise ValueError(f"y passed to {self.owner}.fit contains NaN or infinity in its "
                             "dask blocks: a label must be a class; remove those rows "
                             "(y.notnull() selects the others).")
        check_class_count(self.owner, len(labels), self.n_samples)
        return labels, counts

    def variance(self, weights: Array | None = None) -> float:
        if weights is not None:
            raise ValueError(f"{self.owner}.fit on dask collections takes no row weights.")
        return float(self.X.var().compute())

    def labels(self) -> NDArray[Any]:
        """y on the driver: one number per row (what splits the rows into folds needs)."""
        assert self.y is not None
        return np.asarray(self.y.compute())

    def collect(self, why: str) -> InMemoryRows:
        """The rows on the driver (once), after checking they fit this machine's memory."""
        if self.rows is None:
            check_memory(8 * self.n_samples * (self.n_features + 1),
                         f"{self.owner}.fit on dask collections, gathering its {self.n_samples} "
                         f"rows to the driver for {why},",
                         "Use an integer n_expansion, or a machine with more memory.")
            X, y = self.X.compute(), None if self.y is None else self.y.compute()
            self.rows = InMemoryRows(np.asarray(X, dtype=np.float64), y)
        return self.rows

    def row_weight(self, weights: NDArray[Any]) -> Any:
        """``weights`` (one per row, on the driver) as a dask array in the blocks' chunks."""
        import dask.array as da

        return da.from_array(np.asarray(weights, dtype=float), chunks=(self.X.chunks[0],))
