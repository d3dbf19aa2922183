"""Each built-in formulation checks its hyperparameters when made, in scikit-learn's words."""

from __future__ import annotations

import numpy as np
import pytest

from sparsify.algorithms.kfd.formulation import KFD, SKFD
from sparsify.algorithms.oneclass.formulation import OneClass
from sparsify.algorithms.s3vm.formulation import S3VM
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.formulation import make_formulation

RANGE = r"must be a float in the range \(0\.0, inf\)\."

BAD = [
    ("svm", SVM, {"C": -5}, rf"The 'C' parameter of SVM {RANGE} Got -5 instead\."),
    ("svm", SVM, {"C": 0.0}, rf"The 'C' parameter of SVM {RANGE} Got 0\.0 instead\."),
    ("svm", SVM, {"C": float("inf")}, rf"The 'C' parameter of SVM {RANGE} Got inf instead\."),
    ("svm", SVM, {"C": "big"}, rf"The 'C' parameter of SVM {RANGE} Got 'big' instead\."),
    ("svm", SVM, {"C": [1.0, -1.0]}, r"The 'C' parameter of SVM must be an array of finite "
                                     r"costs >= 0\. Got -1\.0 at index 1 instead\."),
    ("svm", SVM, {"C": [1.0, np.nan]}, r"costs >= 0\. Got nan at index 1 instead\."),
    ("svm", SVM, {"C": [0.0, 0.0]}, r"The 'C' parameter of SVM must have at least one positive "
                                    r"cost\. Got all zeros instead\."),
    ("svm", SVM, {"C": [[1.0, 2.0]]}, r"or a one-dimensional array of per-point costs\. Got an "
                                      r"array that is not one-dimensional instead\."),
    ("kfd", KFD, {"mu": 0.0}, rf"The 'mu' parameter of KFD {RANGE} Got 0\.0 instead\."),
    ("skfd", SKFD, {"mu": -1}, rf"The 'mu' parameter of SKFD {RANGE} Got -1 instead\."),
    ("oneclass", OneClass, {"nu": 0.0}, r"The 'nu' parameter of OneClass must be a float in the "
                                        r"range \(0\.0, 1\.0\]\. Got 0\.0 instead\."),
    ("oneclass", OneClass, {"nu": 1.5}, r"range \(0\.0, 1\.0\]\. Got 1\.5 instead\."),
    ("s3vm", S3VM, {"C": -1.0}, rf"The 'C' parameter of S3VM {RANGE} Got -1\.0 instead\."),
    ("s3vm", S3VM, {"C_star": 0}, rf"The 'C_star' parameter of S3VM {RANGE} Got 0 instead\."),
    ("s3vm", S3VM, {"labeled": [[True, False]]}, r"The 'labeled' parameter of S3VM must be None "
                                                 r"or a one-dimensional array of bools \(one per "
                                                 r"training point\)\. Got an array of shape "
                                                 r"\(1, 2\) instead\."),
    ("s3vm", S3VM, {"labeled": [0.5, 1.0]}, r"Got values other than True/False or 1/0 instead\."),
]


@pytest.mark.parametrize(("name", "cls", "params", "match"), BAD,
                         ids=[f"{b[0]}-{b[3][-30:]}" for b in BAD])
def test_a_bad_hyperparameter_fails_when_the_formulation_is_made(name, cls, params, match) -> None:
    with pytest.raises(ValueError, match=match):
        cls(**params)
    # by name too, and not read as a parameter the formulation does not take
    with pytest.raises(ValueError, match=match) as info:
        make_formulation(name, **params)
    assert "does not take" not in str(info.value)


def test_good_hyperparameters_are_kept() -> None:
    assert SVM(C=2).C == 2.0
    np.testing.assert_array_equal(SVM(C=[0.0, 1.5]).C, [0.0, 1.5])
    assert KFD(mu=0.5).mu == 0.5 and SKFD(mu=2).mu == 2.0
    assert OneClass(nu=1.0).nu == 1.0
    form = S3VM(C=2.0, C_star=0.1, labeled=[1, 0, 1])
    assert form.labeled.tolist() == [True, False, True]
