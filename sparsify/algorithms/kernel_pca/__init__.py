"""Kernel PCA: its formulation, its eigenproblem W(Z) and ∇W(Z), the pre-image iteration, and
`SparseKernelPCA`."""
