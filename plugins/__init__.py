"""Built-in formulations of sparsify, registered through the ``sparsify`` entry points.

The core never imports this package; it is found like any third-party plugin.
"""
