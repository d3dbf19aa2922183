"""Support vector regression: its formulation, its exact W(Z) and ∇W(Z), and `SparseSVR`."""
