"""The built-in kernel algorithms, one package each: formulation, own solver, estimator.

Each registers its formulation through the ``sparsify`` entry-point group, as a
third-party plugin does; the core never imports them.
"""
