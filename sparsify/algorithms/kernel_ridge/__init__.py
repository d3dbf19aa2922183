"""Kernel ridge regression: its formulation, its closed-form W(Z) and ∇W(Z), and
`SparseKernelRidge`."""
