"""functx: JAX-style function transformations with staged compilation, in Python.

Write a pure numerical function with ``functx.numpy``; functx traces it into a printable IR
(``make_jaxpr``), transforms it, and runs it.
"""

import contextlib as _contextlib
import functools as _functools

import optree as _optree

from functx import (
    ad_checkpoint as ad_checkpoint,
    config as config,
    custom_batching as custom_batching,
    custom_derivatives as custom_derivatives,
    debug as debug,
    distributed as distributed,
    dlpack as dlpack,
    dtypes as dtypes,
    errors as errors,
    example_libraries as example_libraries,
    experimental as experimental,
    export as export,
    extend as extend,
    flatten_util as flatten_util,
    image as image,
    lax as lax,
    memory as memory,
    monitoring as monitoring,
    nn as nn,
    numpy as numpy,
    profiler as profiler,
    random as random,
    ref as ref,
    scipy as scipy,
    sharding as sharding,
    stages as stages,
    tree as tree,
    tree_util as tree_util,
    typing as typing,
    version as version,
)
from functx._compile_time import ensure_compile_time_eval as ensure_compile_time_eval
from functx._runtime import (
    host_count as host_count,
    host_id as host_id,
    host_ids as host_ids,
    live_arrays as live_arrays,
    print_environment_info as print_environment_info,
)
from functx._shard import Shard as Shard
from functx._shard_map import (
    pmap as pmap,
    shard_map as shard_map,
    smap as smap,
)
from functx._toplevel import effects_barrier as effects_barrier, fwd_and_bwd as fwd_and_bwd
from functx.ad_checkpoint import checkpoint_policies as checkpoint_policies
from functx.array import Array as Array
from functx.config import (
    _jax2tf_associative_scan_reductions as jax2tf_associative_scan_reductions,
    allow_f16_reductions as allow_f16_reductions,
    array_garbage_collection_guard as array_garbage_collection_guard,
    auto_pcast as auto_pcast,
    check_tracer_leaks as check_tracer_leaks,
    debug_infs as debug_infs,
    debug_key_reuse as debug_key_reuse,
    debug_nans as debug_nans,
    default_matmul_precision as default_matmul_precision,
    default_prng_impl as default_prng_impl,
    disable_jit as disable_jit,
    enable_checks as enable_checks,
    enable_custom_prng as enable_custom_prng,
    enable_x64 as enable_x64,
    explain_cache_misses as explain_cache_misses,
    legacy_prng_key as legacy_prng_key,
    log_compiles as log_compiles,
    make_user_context as make_user_context,
    no_execution as no_execution,
    no_tracing as no_tracing,
    numpy_dtype_promotion as numpy_dtype_promotion,
    numpy_rank_promotion as numpy_rank_promotion,
    remove_size_one_mesh_axis_from_type as remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp as softmax_custom_jvp,
    thread_guard as thread_guard,
    threefry_partitionable as threefry_partitionable,
    transfer_guard as transfer_guard,
    transfer_guard_device_to_device as transfer_guard_device_to_device,
    transfer_guard_device_to_host as transfer_guard_device_to_host,
    transfer_guard_host_to_device as transfer_guard_host_to_device,
)
from functx.control.callbacks import pure_callback as pure_callback
from functx.control.custom_derivatives import (
    custom_jvp as custom_jvp,
    custom_vjp as custom_vjp,
)
from functx.control.remat import checkpoint as checkpoint, remat as remat
from functx.core import (
    ClosedJaxpr as ClosedJaxpr,
    Jaxpr as Jaxpr,
    ShapedArray as ShapedArray,
    typecheck_jaxpr as typecheck_jaxpr,
)
from functx.custom_derivatives import (
    closure_convert as closure_convert,
    custom_gradient as custom_gradient,
)
from functx.devices.device import (
    Device as Device,
    DeviceError as DeviceError,
    default_backend as default_backend,
    default_device as default_device,
    device_count as device_count,
    devices as devices,
    local_device_count as local_device_count,
    local_devices as local_devices,
    process_count as process_count,
    process_index as process_index,
    process_indices as process_indices,
)
from functx.devices.transfer import device_get as device_get
from functx.dtypes import float0 as float0
from functx.errors import (
    CacheWarning as CacheWarning,
    ConcretizationError as ConcretizationError,
    FunctxArgumentError as FunctxArgumentError,
    FunctxAttributeError as FunctxAttributeError,
    FunctxError as FunctxError,
    FunctxIndexError as FunctxIndexError,
    FunctxOverflowError as FunctxOverflowError,
    FunctxTypeError as FunctxTypeError,
    FunctxValueError as FunctxValueError,
    UnsupportedError as UnsupportedError,
    missing_name_hook as _missing_name_hook,
)
from functx.jit import (
    clear_caches as clear_caches,
    host_tree as _host_tree,
    jit as jit,
)
from functx.ref import (
    Ref as Ref,
    empty_ref as empty_ref,
    free_ref as free_ref,
    freeze as freeze,
    new_ref as new_ref,
)
from functx.sharding import (
    NamedSharding as NamedSharding,
    P as P,
    device_put as device_put,
    make_array_from_callback as make_array_from_callback,
    make_array_from_process_local_data as make_array_from_process_local_data,
    make_array_from_single_device_arrays as make_array_from_single_device_arrays,
    make_mesh as make_mesh,
    reshard as reshard,
    set_mesh as set_mesh,
)
from functx.tracing import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    eval_shape as eval_shape,
    make_jaxpr as make_jaxpr,
    named_scope as named_scope,
    typeof as typeof,
)
from functx.transforms.jvp import jvp as jvp
from functx.transforms.linearize import linearize as linearize
from functx.transforms.transpose import linear_transpose as linear_transpose
from functx.transforms.vjp import (
    grad as grad,
    hessian as hessian,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    value_and_grad as value_and_grad,
    vjp as vjp,
)
from functx.transforms.vmap import vmap as vmap
from functx.version import __version__ as __version__, __version_info__ as __version_info__


def block_until_ready(x):
    """Wait until a pytree of arrays is computed (``jax.block_until_ready``; GPU work runs
    asynchronously).

    Arguments:
      x: a pytree; its array leaves are waited for, other leaves pass through.
    Returns:
      ``x``.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.block_until_ready({"y": jnp.arange(3) * 2})
      {'y': Array([0, 2, 4], dtype=int32)}
    """
    if type(x) is Array or _host_tree(x):  # host arrays are computed by the time they exist
        return x
    # (optree's own call: ``tree_util.tree_leaves`` checks an ``is_leaf`` this has none of)
    for leaf in _optree.tree_leaves(x, none_is_leaf=False, namespace=tree_util.PYTREE_NAMESPACE):
        if type(leaf) is not Array and hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def copy_to_host_async(x):
    """Start copying every array leaf of ``x`` to the host (``jax.copy_to_host_async``): calls
    each leaf's ``copy_to_host_async`` method where it has one.

    Arguments:
      x: a pytree.
    Returns:
      ``x``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> functx.copy_to_host_async([jnp.ones(2), 3])
      [Array([1., 1.], dtype=float32), 3]
    """
    for leaf in tree_util.tree_leaves(x):
        try:
            start = leaf.copy_to_host_async
        except AttributeError:
            continue
        start()
    return x


def named_call(fun, *, name=None):
    """``fun`` run under ``named_scope(name)`` (``jax.named_call``; ``name`` defaults to
    ``fun.__name__``). JAX names the staged sub-computation for profilers; functx's Jaxprs and
    programs are the same as without it.

    Arguments:
      fun: the function.
      name: the scope's name (default ``fun.__name__``).
    Returns:
      the wrapped function.

    Differences from JAX: ``named_scope`` around the function, which names nothing in functx.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> f = functx.named_call(lambda x: x * 2.0, name="double")
      >>> f(jnp.float32(3))
      Array(6., dtype=float32)
    """
    if name is None:
        name = fun.__name__

    @_functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(name):
            return fun(*args, **kwargs)

    return named


@_contextlib.contextmanager
def checking_leaks():
    """JAX's ``jax.checking_leaks()`` (``jax_check_tracer_leaks`` on inside the block).

    functx does not scan for leaked tracers when a transformation ends; a leaked tracer is
    reported when it is used (``UnexpectedTracerError``, naming where it was created), with or
    without this block. The block runs unchanged.

    Arguments:
      none.
    Returns:
      a context manager.

    Differences from JAX: the block runs unchanged: a leaked tracer is reported when it is used
    (UnexpectedTracerError), not when a transformation ends.

    Example:
      >>> import functx
      >>> with functx.checking_leaks():
      ...     y = functx.grad(lambda x: x * x)(1.5)
      >>> y
      Array(3., dtype=float32, weak_type=True)
    """
    yield


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "Array",
    "CacheWarning",
    "ClosedJaxpr",
    "ConcretizationError",
    "Device",
    "DeviceError",
    "FunctxError",
    "FunctxIndexError",
    "FunctxOverflowError",
    "FunctxArgumentError",
    "FunctxAttributeError",
    "FunctxTypeError",
    "FunctxValueError",
    "Jaxpr",
    "ShapeDtypeStruct",
    "ShapedArray",
    "UnsupportedError",
    "ad_checkpoint",
    "block_until_ready",
    "checkpoint",
    "checking_leaks",
    "closure_convert",
    "copy_to_host_async",
    "custom_batching",
    "custom_derivatives",
    "custom_gradient",
    "named_call",
    "checkpoint_policies",
    "clear_caches",
    "config",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "dlpack",
    "distributed",
    "default_backend",
    "default_device",
    "default_matmul_precision",
    "device_count",
    "local_device_count",
    "process_count",
    "process_index",
    "process_indices",
    "device_get",
    "device_put",
    "devices",
    "disable_jit",
    "local_devices",
    "dtypes",
    "enable_x64",
    "random",
    "errors",
    "example_libraries",
    "eval_shape",
    "typeof",
    "experimental",
    "flatten_util",
    "grad",
    "image",
    "jit",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "lax",
    "linearize",
    "linear_transpose",
    "float0",
    "make_jaxpr",
    "named_scope",
    "nn",
    "numpy",
    "numpy_dtype_promotion",
    "numpy_rank_promotion",
    "pure_callback",
    "remat",
    "scipy",
    "tree",
    "tree_util",
    "typecheck_jaxpr",
    "value_and_grad",
    "vjp",
    "vmap",
    "sharding",
    "NamedSharding",
    "P",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
    "make_mesh",
    "shard_map",
    "pmap",
    "ensure_compile_time_eval",
    "legacy_prng_key",
    "log_compiles",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
    # names35a
    "profiler",
    "stages",
    "typing",
    "version",
    "debug_nans",
    "debug_infs",
    "check_tracer_leaks",
    "default_prng_impl",
    "host_count",
    "host_id",
    "host_ids",
    "live_arrays",
    "print_environment_info",
    # names35c
    "export",
    "reshard",
    "set_mesh",
    "smap",
    # names36
    "enable_checks",
    "explain_cache_misses",
    "no_tracing",
    "no_execution",
    "thread_guard",
    "debug_key_reuse",
    "softmax_custom_jvp",
    "threefry_partitionable",
    "enable_custom_prng",
    "allow_f16_reductions",
    "array_garbage_collection_guard",
    "remove_size_one_mesh_axis_from_type",
    "jax2tf_associative_scan_reductions",
    "auto_pcast",
    "Shard",
    "effects_barrier",
    "fwd_and_bwd",
    "make_user_context",
    "memory",
    "monitoring",
    "extend",
    # refs37
    "ref",
    "Ref",
    "new_ref",
    "empty_ref",
    "freeze",
    "free_ref",
]
