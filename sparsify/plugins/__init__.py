"""The plugin host: the hooks sparsify calls and the registry that loads plugins.

`hookspecs` is the contract (every hook with its exact signature, `hookimpl`);
`registry` loads the built-in plugins and the ``sparsify`` entry points and maps
names to formulations, kernels, solver backends and estimators (`get_registry`,
`register_plugin`). The core, the kernels and the built-in algorithms register and
look up through it; it imports none of them at run time, so each of them can
depend on it without depending on the others.
"""
