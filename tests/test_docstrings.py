"""Every public name of every public namespace (functx/_public.py) is documented, and every
docstring example runs and prints what it shows (issue 21).

For each name in a namespace's ``__all__``: a function has Arguments, Returns and Example sections;
a class has a docstring with an Example; constants (``pi``, ``newaxis``, dtype objects, ...) are
exempt, and so are the few objects functx re-exports from NumPy, ml_dtypes, optree or typing as
JAX does (``FOREIGN`` below, each with its reason); a name that deliberately differs from JAX
(``DIFFERS_FROM_JAX``) says how in a "Differences from JAX:" paragraph. Each docstring's examples
run once (aliases such as ``jnp.absolute``/``jnp.abs`` share one function), with the methods of
public classes, under doctest with x64 off (tests/conftest.py), JAX's default mode. The test is
sharded by namespace so pytest-xdist spreads it.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import inspect
import types

import pytest

from functx._public import all_namespaces, public_names

# Objects functx re-exports from other libraries, as JAX re-exports them; their documentation is
# their library's (a docstring cannot be set on NumPy's or optree's types).
_NUMPY = "NumPy's own class, re-exported as jax.numpy does"
_ML_DTYPES = "ml_dtypes' scalar type, re-exported as jax.numpy does"
FOREIGN: dict[str, str] = {
    "functx.numpy.dtype": _NUMPY,
    "functx.numpy.generic": _NUMPY,
    "functx.numpy.number": _NUMPY,
    "functx.numpy.inexact": _NUMPY,
    "functx.numpy.floating": _NUMPY,
    "functx.numpy.complexfloating": _NUMPY,
    "functx.numpy.integer": _NUMPY,
    "functx.numpy.signedinteger": _NUMPY,
    "functx.numpy.unsignedinteger": _NUMPY,
    "functx.numpy.character": _NUMPY,
    "functx.numpy.flexible": _NUMPY,
    "functx.numpy.object_": _NUMPY,
    "functx.numpy.ComplexWarning": _NUMPY,
    "functx.numpy.int1": _ML_DTYPES,
    "functx.numpy.uint1": _ML_DTYPES,
    "functx.numpy.float6_e2m3fn": _ML_DTYPES,
    "functx.numpy.float6_e3m2fn": _ML_DTYPES,
    "functx.tree_util.PyTreeDef": "optree's PyTreeSpec (functx's pytrees are optree's)",
    "functx.tree_util.KeyPath": "a typing alias, tuple[KeyEntry, ...], as in jax.tree_util",
    "functx.typing.ArrayLike": "a typing.Union alias, as jax.typing.ArrayLike",
    "functx.typing.DTypeLike": "a typing.Union alias, as jax.typing.DTypeLike",
    "functx.experimental.checkify.ErrorCategory": "a typing alias, type[JaxException], as in JAX",
    "functx.stages.CompilerOptions": "a typing alias, dict[str, str | bool], as in jax.stages",
    "functx.lax.DotDimensionNumbers": "a typing alias, as in jax.lax",
    "functx.lax.PrecisionLike": "a typing alias, as in jax.lax",
    "functx.lax.ConvGeneralDilatedDimensionNumbers": "a typing alias, as in jax.lax",
}


# Examples that fail for a reason outside the docstring, skipped only while that reason holds
# (a check of it): once it is fixed they run like every other example, and the entry can go.
def _not_callable(name):
    return lambda: not callable(getattr(importlib.import_module("functx.numpy"), name))


PENDING: dict[str, object] = {
    # jnp.complex64/complex128 are NumPy dtypes, not JAX's callable scalar types (requests.md)
    "functx.numpy.csingle": _not_callable("complex64"),
    "functx.numpy.cdouble": _not_callable("complex128"),
    # they call sparse36a's bcoo_broadcast_in_dim/bcoo_concatenate (a branch of session 36)
    "functx.experimental.sparse.bcsr_broadcast_in_dim": lambda: (
        not hasattr(
            importlib.import_module("functx.experimental.sparse.bcoo"), "bcoo_broadcast_in_dim"
        )
    ),
    "functx.experimental.sparse.bcsr_concatenate": lambda: (
        not hasattr(importlib.import_module("functx.experimental.sparse.bcoo"), "bcoo_concatenate")
    ),
}

# Names that deliberately differ from JAX (docs/differences.md): their docstrings say how in a
# "Differences from JAX:" paragraph.
DIFFERS_FROM_JAX: dict[str, str] = {
    "functx": (
        "Array ShapeDtypeStruct checking_leaks checkpoint custom_vjp enable_x64 grad hessian "
        "jacfwd jacobian jacrev jit jvp linearize named_call named_scope pure_callback "
        "value_and_grad vjp transfer_guard transfer_guard_host_to_device "
        "transfer_guard_device_to_device transfer_guard_device_to_host legacy_prng_key "
        "log_compiles ensure_compile_time_eval device_put pmap shard_map debug_nans debug_infs "
        "check_tracer_leaks default_prng_impl print_environment_info smap enable_checks "
        "explain_cache_misses no_tracing thread_guard debug_key_reuse enable_custom_prng "
        "array_garbage_collection_guard"
    ),
    "functx.ad_checkpoint": "Offloadable",
    "functx.ref": "empty_ref freeze free_ref",  # (refs37: the invalidation is checked)
    "functx.custom_batching": "custom_vmap",
    "functx.debug": (
        "breakpoint callback print inspect_array_sharding visualize_sharding "
        "visualize_array_sharding"
    ),
    "functx.extend.core": "Primitive",
    "functx.monitoring": (
        "clear_event_listeners unregister_event_listener unregister_event_duration_listener "
        "unregister_event_time_span_listener unregister_scalar_listener"
    ),
    "functx.tree_util": "flatten_one_level_with_keys",
    "functx.errors": (
        "NonConcreteBooleanIndexError TracerArrayConversionError TracerIntegerConversionError"
    ),
    "functx.experimental": "io_callback",
    "functx.experimental.sparse.linalg": "lobpcg_standard spsolve",
    "functx.profiler": (
        "ProfileOptions start_trace trace device_memory_profile save_device_memory_profile "
        "start_server stop_server register_subprocess"
    ),
    "functx.lax": (
        "all_gather all_to_all axis_index axis_size bitcast_convert_type conv "
        "conv_general_dilated conv_transpose conv_with_general_padding custom_linear_solve "
        "dot_general fft gather pbroadcast pmax pmean pmin ppermute pshuffle psum "
        "psum_scatter pswapaxes reduce_window rng_bit_generator rng_uniform sort scatter_add "
        "scatter_mul scatter_min scatter_max add sub mul div rem max min pow atan2 nextafter "
        "platform_dependent create_token after_all DotAlgorithmPreset with_sharding_constraint "
        "composite scaled_dot dce_sink"
    ),
    "functx.sharding": "reshard",
    "functx.nn": "scaled_matmul scaled_dot_general",
    "functx.export": "export",
    "functx.lax.linalg": "cholesky_update eigh ormqr qr svd symmetric_product tridiagonal_solve",
    "functx.numpy": "convolve frexp from_dlpack ldexp nextafter searchsorted unique",
    "functx.numpy.fft": (
        "fft fft2 fftn hfft ifft ifft2 ifftn ihfft irfft irfft2 irfftn rfft rfft2 rfftn"
    ),
    "functx.numpy.linalg": "det eig eigvals pinv qr solve svd",
    "functx.ops": "segment_prod",
    "functx.random": (
        "KeyArray ball cauchy key laplace logistic multivariate_normal truncated_normal"
    ),
    "functx.scipy.linalg": (
        "dft eigh_tridiagonal invhilbert invpascal pascal polar qr qr_multiply sqrtm"
    ),
    "functx.scipy.signal": "convolve convolve2d correlate correlate2d csd istft",
    "functx.scipy.optimize": "minimize",
    "functx.scipy.special": "hyp2f1 owens_t sph_harm_y",
    "functx.scipy.spatial.transform": "Rotation",
    "functx.image": "resize scale_and_translate",
    "functx.example_libraries.stax": "parallel",
}

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _kind(obj) -> str:
    if isinstance(obj, type):
        return "class"
    return "function" if callable(obj) else "constant"


@functools.cache
def _entries() -> list[tuple[str, str, object]]:
    """(namespace, qualified name, object) for every public name that is not a module."""
    out = []
    for ns in all_namespaces():
        module = importlib.import_module(ns)
        for name in public_names(ns):
            obj = getattr(module, name)
            if not isinstance(obj, types.ModuleType):
                out.append((ns, f"{ns}.{name}", obj))
    return out


@functools.cache
def _owner() -> dict[int, str]:
    """The first qualified name of each object: its examples run in that name's shard only."""
    first: dict[int, str] = {}
    for _, qual, obj in _entries():
        first.setdefault(id(obj), qual)
    return first


def _own_methods(cls):
    """The methods and properties a functx class defines (their docstrings' examples run too)."""
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property):
            member = member.fget
        if inspect.isfunction(member) and member.__doc__:
            yield f"{cls.__name__}.{name}", member


def _doctests(qual, obj):
    finder = doctest.DocTestFinder(recurse=False)
    tests = list(finder.find(obj, qual, globs={}))
    if isinstance(obj, type) and obj.__module__.startswith("functx"):
        for name, member in _own_methods(obj):
            tests += finder.find(member, f"{qual.rpartition('.')[0]}.{name}", globs={})
    return [t for t in tests if t.examples]


def test_every_namespace_is_importable_and_listed():
    for ns in all_namespaces():
        assert public_names(ns), ns


def _foreign(obj) -> bool:
    return not (getattr(obj, "__module__", None) or "").startswith("functx")


def test_foreign_objects_are_listed():
    """Every object from another library is in FOREIGN (a listed name that becomes functx's own
    object is checked like the others)."""
    foreign = {qual for _, qual, obj in _entries() if _kind(obj) != "constant" and _foreign(obj)}
    assert foreign <= set(FOREIGN), foreign - set(FOREIGN)


@pytest.mark.parametrize("namespace", all_namespaces())
def test_sections_and_examples(namespace):
    owner = _owner()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    lacking, failed = [], []
    for ns, qual, obj in _entries():
        if ns != namespace or (qual in FOREIGN and _foreign(obj)):
            continue
        kind = _kind(obj)
        if kind == "constant":
            continue
        doc = obj.__doc__ or ""
        needed = ("Example",) if kind == "class" else ("Arguments:", "Returns:", "Example:")
        missing = [s for s in needed if s not in doc]
        if missing:
            lacking.append(f"{qual}: {', '.join(missing)}")
            continue
        if owner[id(obj)] != qual:
            continue  # an alias: its examples run under its first name
        tests = _doctests(qual, obj)
        if not tests:
            lacking.append(f"{qual}: an Example section with no >>> example")
        for t in tests:
            before = runner.failures
            if t.name in PENDING and PENDING[t.name]():
                continue
            runner.run(t)
            if runner.failures != before:
                failed.append(t.name)
    assert not lacking, "undocumented:\n" + "\n".join(lacking)
    assert not failed, f"examples that fail: {failed}"


# functx.numpy's aliases are the documented function itself (one docstring, run once).
NUMPY_ALIASES = {
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "absolute": "abs", "fix": "trunc",
    "around": "round", "radians": "deg2rad", "degrees": "rad2deg", "atan2": "arctan2",
    "divide": "true_divide", "mod": "remainder", "pow": "power", "bitwise_not": "invert",
    "bitwise_invert": "invert", "amax": "max", "amin": "min", "permute_dims": "transpose",
    "row_stack": "vstack",
}  # fmt: skip


def test_differences_from_jax_are_documented():
    missing = []
    for ns, names in DIFFERS_FROM_JAX.items():
        module = importlib.import_module(ns)
        for name in names.split():
            if "Differences from JAX:" not in (getattr(module, name).__doc__ or ""):
                missing.append(f"{ns}.{name}")
    assert not missing, f"no 'Differences from JAX:' paragraph: {missing}"


def test_numpy_aliases_share_one_documented_function():
    import functx.numpy as jnp

    for alias, name in NUMPY_ALIASES.items():
        assert getattr(jnp, alias) is getattr(jnp, name), alias
    for name in ("matrix_transpose", "matmul", "vecdot", "outer", "tensordot"):
        assert getattr(jnp.linalg, name) is getattr(jnp, name), name
