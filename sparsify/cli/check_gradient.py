"""``sparsify check-gradient``: the gradient of W(Z) against finite differences.

Exit status 0 when the check passes its threshold, 1 when it fails
(`sparsify.core.gradcheck.check_gradient` does the work).
"""

from __future__ import annotations

import argparse

import numpy as np

from sparsify.cli.data import (
    _check_reading_options,
    _read,
    _refuse_reading_options,
    _validated,
)
from sparsify.cli.lookup import _check_solver, _formulation_class, _warn_unused_kernel_options
from sparsify.cli.output import _label, _print_json, _stdout_to_stderr


def _cmd_check_gradient(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.core.gradcheck import check_gradient

    form_cls = _formulation_class(args.formulation)
    _check_solver(args.solver)
    X = y = None
    reading: list[str] = []
    if args.data is None:
        _refuse_reading_options(args, "the check runs on a small random problem")
    _warn_unused_kernel_options(args.kernel, {"gamma": args.gamma != "scale"})
    if args.data is not None:
        data = _read(args.data, args.split, args)
        _check_reading_options(args, data)
        reading = list(data.notes)
        X, y = _validated(data.X, data.y, f"data {args.data}")
        from sparsify.core.estimator import estimator_for

        try:
            est_cls: type | None = estimator_for(form_cls)[0]
        except ValueError:  # no estimator: the data go to the formulation as they are
            est_cls = None
        coded = form_cls.task in ("multioutput_classifier", "ordinal_regressor")
        if coded or (est_cls is not None and is_classifier(est_cls())):
            # as the estimator hands them over: class codes 0..K−1 (levels in sorted order
            # for an ordinal regressor) or, for a binary problem, labels -1/+1
            check_classification_targets(y)
            classes, codes = np.unique(y, return_inverse=True)
            if len(classes) < 2:
                raise ValueError(f"The data {args.data} has only one class "
                                 f"({_label(classes[0])!r}); a classifier needs at least 2.")
            positive = classes[1] if len(classes) == 2 else classes[0]
            y = codes.ravel() if coded else np.where(y == positive, 1, -1)
    with _stdout_to_stderr(args.json):
        res = check_gradient(args.formulation, args.kernel, args.solver, X=X, y=y,
                             n_expansion=args.n_expansion, gamma=args.gamma,
                             random_state=args.seed)
    passed = res.passed(args.threshold)  # NaN fails
    if args.json:
        _print_json({**res.as_dict(), "threshold": args.threshold, "passed": passed,
                     "data": args.data if args.data is not None else "random problem",
                     "reading": reading, "seed": args.seed})
    else:
        if reading:
            print(f"read {args.data}: {'; '.join(reading)}")
        print(f"gradient check: formulation {res.formulation}, kernel {res.kernel}, solver "
              f"{res.solver}, Nz = {res.grad.shape[0]}, d = {res.grad.shape[1]}")
        if res.flat:
            print(f"W(Z) = {res.value:.6g} does not change with the XVs here (|∇W| = "
                  f"{np.linalg.norm(res.grad):.1e}, finite differences "
                  f"{np.linalg.norm(res.numeric):.1e}): the kernel is constant on these data "
                  "or vanishes between points, so no gradient error can show. Use a gamma "
                  "near 'scale' (1/(d·Var(X))) or other data; threshold "
                  f"{args.threshold:g}: CANNOT JUDGE")
            return 1
        verdict = "OK" if passed else "FAILED"
        print(f"rel_error = {res.rel_error:.3e}, finite differences accurate to "
              f"{res.fd_error:.1e} (noise of W {res.noise:.1e}, step {res.step:.1e}); "
              f"threshold {args.threshold:g}: {verdict}")
    return 0 if passed else 1
