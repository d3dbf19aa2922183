"""The semi-supervised SVM with Lp-norm multiple kernel learning, and `SemiSupervisedSVC`.

Modules: ``formulation`` (the convex stage at fixed labels, the ``"s3vm"``
formulation), ``estimator`` (`SemiSupervisedSVC`), ``labels`` (reading ``y``,
label switching), ``kernel_spec`` (the ``kernels`` spec, the paper's default
kernels), ``engines`` (the dense and sparse solver engines), ``annealing``
(the label search, Algorithms 1 and 2), ``smooth`` (the objective and the
smooth quasi-Newton optimiser) and ``mkl`` (the Lp-norm kernel weights).
"""
