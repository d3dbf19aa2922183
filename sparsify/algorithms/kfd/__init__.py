"""The kernel Fisher discriminant, convex or the Rayleigh quotient, and `SparseKFD`."""
