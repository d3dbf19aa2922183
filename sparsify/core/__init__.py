"""The core of sparsify: what every kernel algorithm shares and none depends on.

The formulation contract (`sparsify.core.formulation`), the marginal function
W(Z) and Lemma 1's gradient (`~.marginal`, `~.conic`), the L-BFGS optimiser
over the XVs (`~.optimize`), expansion coefficients for given XVs
(`~.expansion`), the registry of plugins (`~.registry`, `~.hookspecs`) and what
a plugin's code may not do (`~.plugin_code`), the solver backends
(`~.solvers`), gradient verification (`~.gradcheck`), the fit driver every
estimator is built on (`~.estimator`) and the labels it takes (`~.labels`),
memory estimates (`~.memory`) and errors (`~.errors`). The core imports no algorithm: the
algorithms (`sparsify.algorithms`) register through the same entry points a
third-party plugin uses.
"""
