"""Quick start: a sparse large margin classifier (SLMC) on the embedded Banana data.

Trains SLMC with 10 % of the full SVM's support vectors as free expansion vectors and
compares test error and prediction cost with the full SVM.

    python examples/quickstart.py [--plot banana.png]
"""

from __future__ import annotations

import argparse
import time

from sklearn.svm import SVC

from sparsify import SparseSVC
from sparsify.datasets import load_banana


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", help="write a PNG of the decision boundary and the XVs")
    args = parser.parse_args(argv)

    X, y, X_test, y_test = load_banana()
    full = SVC(C=100.0, gamma=1.0).fit(X, y)
    start = time.perf_counter()
    clf = SparseSVC(n_expansion=0.1, C=100.0, gamma=1.0, random_state=0).fit(X, y)
    seconds = time.perf_counter() - start
    print(f"full SVM: {full.n_support_.sum()} support vectors, "
          f"test error {1 - full.score(X_test, y_test):.3f}")
    print(f"SLMC:     {clf.n_expansion_[0]} expansion vectors, "
          f"test error {1 - clf.score(X_test, y_test):.3f}, fit {seconds:.1f} s, "
          f"W {clf.objective_history_[0][0]:.1f} -> {clf.objective_[0]:.1f}")
    if args.plot:
        from sparsify.cli.plotting import plot_decision_boundary

        plot_decision_boundary(clf, X, y).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
