"""Sparse support vector data description: an example third-party sparsify plugin."""

from sparsify_svdd.plugin import SVDD, SparseSVDD

__all__ = ["SVDD", "SparseSVDD"]
__version__ = "0.1.0"
