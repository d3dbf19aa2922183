"""The core of sparsify: what every kernel algorithm shares and none depends on.

The formulation contract (`sparsify.core.formulation`), the marginal function
W(Z) and Lemma 1's gradient (`~.marginal`, `~.conic`), the L-BFGS optimiser
over the XVs (`~.optimize`), expansion coefficients for given XVs
(`~.expansion`), the solver backends (`~.solvers`), gradient verification
(`~.gradcheck`), the fit driver every estimator is built on (`~.estimator`) with the
labels it takes (`~.labels`) and its warm starts (`~.warm`), memory estimates
(`~.memory`) and errors (`~.errors`). The core imports no algorithm: the algorithms
(`sparsify.algorithms`) register through the same entry points a third-party plugin uses,
with the plugin host (`sparsify.plugins`), which also runs a plugin's code so that it
cannot exit sparsify (`sparsify.plugins.plugin_code`).
"""
