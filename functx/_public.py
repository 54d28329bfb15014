"""The public namespaces of functx, in one place: the docs site's API pages (docs/hooks) and the
docstring test (tests/test_docstrings.py) both read them from here.

``NAMESPACES`` lists every public module, in the order the API reference shows them;
``public_names(name)`` is a namespace's public names: its ``__all__``, or, for the three modules
that have none (they are internal modules that also stand for a JAX namespace), the names listed
in ``EXPLICIT`` (those of the JAX namespace functx has, plus functx's own error classes).
"""

from __future__ import annotations

import importlib

# Every public namespace of functx (a module a user imports or reaches as an attribute).
NAMESPACES: tuple[str, ...] = (
    "functx",
    "functx.numpy",
    "functx.numpy.linalg",
    "functx.numpy.fft",
    "functx.lax",
    "functx.lax.linalg",
    "functx.nn",
    "functx.nn.initializers",
    "functx.random",
    "functx.tree_util",
    "functx.tree",
    "functx.flatten_util",
    "functx.scipy",
    "functx.scipy.special",
    "functx.scipy.stats",
    "functx.scipy.linalg",
    "functx.scipy.fft",
    "functx.scipy.signal",
    "functx.scipy.optimize",
    "functx.scipy.integrate",
    "functx.scipy.ndimage",
    "functx.scipy.interpolate",
    "functx.scipy.cluster",
    "functx.scipy.cluster.vq",
    "functx.scipy.sparse",
    "functx.scipy.sparse.linalg",
    "functx.scipy.spatial",
    "functx.scipy.spatial.transform",
    "functx.debug",
    "functx.sharding",
    "functx.distributed",
    "functx.dlpack",
    "functx.experimental",
    "functx.experimental.ode",
    "functx.experimental.jet",
    "functx.experimental.mesh_utils",
    "functx.experimental.multihost_utils",
    "functx.experimental.pjit",
    "functx.experimental.shard_alike",
    "functx.experimental.compilation_cache.compilation_cache",
    "functx.export",
    "functx.experimental.checkify",
    "functx.experimental.sparse",
    "functx.experimental.sparse.linalg",
    "functx.ad_checkpoint",
    "functx.custom_derivatives",
    "functx.custom_batching",
    "functx.dtypes",
    "functx.errors",
    "functx.test_util",
    "functx.ops",
    "functx.typing",
    "functx.profiler",
    "functx.stages",
    "functx.image",
    "functx.example_libraries",
    "functx.example_libraries.optimizers",
    "functx.example_libraries.stax",
    "functx.monitoring",
    "functx.memory",
    "functx.ref",
    "functx.extend",
    "functx.extend.core",
)

# The distributions of functx.scipy.stats (``functx.scipy.stats.norm.pdf``, ...): public modules
# whose functions are documented with the namespace above them.
SCIPY_STATS_DISTRIBUTIONS: tuple[str, ...] = (
    "bernoulli beta binom cauchy chi2 dirichlet expon gamma geom gumbel_l gumbel_r laplace "
    "logistic multivariate_normal norm pareto poisson t uniform"
).split()

# Public names of the namespaces without ``__all__``.
EXPLICIT: dict[str, tuple[str, ...]] = {
    # jax.dtypes' names that functx.dtypes has (the rest of functx.dtypes is internal)
    "functx.dtypes": (
        "TypePromotionError",
        "bfloat16",
        "canonicalize_dtype",
        "finfo",
        "float0",
        "iinfo",
        "issubdtype",
        "itemsize_bits",
        "result_type",
        "scalar_type_of",
    ),
    # jax.errors' names that functx has, and functx's own error and warning classes
    "functx.errors": (
        "ConcretizationTypeError",
        "NonConcreteBooleanIndexError",
        "TracerArrayConversionError",
        "TracerBoolConversionError",
        "TracerIntegerConversionError",
        "UnexpectedTracerError",
        "InconclusiveDimensionOperation",
        "JAXIndexError",
        "JAXTypeError",
        "JaxRuntimeError",
        "JaxprTypeError",
        "KeyReuseError",
        "FunctxError",
        "FunctxTypeError",
        "FunctxValueError",
        "FunctxArgumentError",
        "FunctxIndexError",
        "FunctxOverflowError",
        "FunctxZeroDivisionError",
        "FunctxAttributeError",
        "FunctxRuntimeError",
        "FunctxFloatingPointError",
        "CheckifyRuntimeError",
        "ConcretizationError",
        "UnsupportedError",
        "CacheWarning",
    ),
    # functx.ops is also the lax operations' module; jax.ops is the segment reductions
    "functx.ops": ("segment_max", "segment_min", "segment_prod", "segment_sum"),
}


def all_namespaces() -> tuple[str, ...]:
    """``NAMESPACES`` and the scipy.stats distribution modules after them."""
    return NAMESPACES + tuple(f"functx.scipy.stats.{d}" for d in SCIPY_STATS_DISTRIBUTIONS)


def public_names(name: str) -> list[str]:
    """The public names of the namespace ``name`` (a module name of ``all_namespaces()``): its
    ``__all__``, or its ``EXPLICIT`` list. The module is imported on demand (this module sits at
    the top layer: it may import any functx module)."""
    if name in EXPLICIT:
        return list(EXPLICIT[name])
    return list(importlib.import_module(name).__all__)
