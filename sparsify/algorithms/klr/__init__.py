"""Kernel logistic regression (binary or softmax), its Newton solver, and
`SparseKernelLogisticRegression`."""
