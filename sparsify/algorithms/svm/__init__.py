"""The soft-margin SVM: its formulation, its exact fast path (dual coordinate descent and an
active-set polish, in C), the same evaluation over Dask row blocks, and `SparseSVC`."""
