"""Build of sparsify's C extensions; everything else is declared in pyproject.toml.

A setup.py rather than ``[tool.setuptools] ext-modules``: the compile flags depend on
the compiler (MSVC takes neither ``-O2`` nor ``-ffp-contract``), and pyproject.toml
can only give one list for all of them.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Optimise, but fuse no multiply-add (gcc and clang may contract a * b + c into an
# FMA, which rounds once instead of twice): x86-64 and arm64 then give the same
# round-off as far as the C library allows. MSVC does not contract at /fp:precise,
# its default.
FLAGS = {"msvc": ["/O2"], "unix": ["-O2", "-ffp-contract=off"]}


class BuildExt(build_ext):
    """build_ext with compile flags chosen per compiler."""

    def build_extensions(self) -> None:
        flags = FLAGS.get(self.compiler.compiler_type, FLAGS["unix"])
        for extension in self.extensions:
            extension.extra_compile_args = flags
        super().build_extensions()


setup(
    ext_modules=[
        # the SVM dual engine's solvers; both include sparsify/svm_dual/_buffers.h
        *(Extension(f"sparsify.svm_dual.{name}", [f"sparsify/svm_dual/{name}.c"],
                    depends=["sparsify/svm_dual/_buffers.h"])
          for name in ("_active_set", "_dual_cd")),
        # the structured interior point's batched inverses of small blocks
        Extension("sparsify.core.structured._blocks", ["sparsify/core/structured/_blocks.c"]),
    ],
    cmdclass={"build_ext": BuildExt},
)
