"""The docstring examples of the lax ops, transforms, control flow, nn, errors, devices, core and
dtypes names (each with Arguments/Returns/Example sections) run and print what they show
(tests/conftest.py runs doctests with x64 off, JAX's default mode)."""

import doctest
import importlib

import pytest

NAMES = {
    "functx.lax": (
        "RoundingMethod round integer_pow square reciprocal select_n select clamp "
        "convert_element_type iota broadcasted_iota stop_gradient reduce_sum reduce_prod "
        "reduce_max reduce_min reduce_and reduce_or argmax argmin broadcast_in_dim broadcast "
        "reshape transpose squeeze expand_dims rev slice slice_in_dim index_in_dim dynamic_slice "
        "dynamic_update_slice dynamic_slice_in_dim dynamic_index_in_dim "
        "dynamic_update_slice_in_dim concatenate pad full full_like zeros_like_array Precision "
        "canonicalize_precision dot_general dot associative_scan cumsum cumprod cummax cummin "
        "cumlogsumexp cond switch scan map fori_loop while_loop reduce"
    ),
    "functx": (
        "vjp value_and_grad grad jacfwd jacrev jacobian hessian linearize block_until_ready "
        "default_matmul_precision ShapedArray Jaxpr ClosedJaxpr typecheck_jaxpr DeviceError "
        "Device local_devices device_count default_backend default_device device_get "
        "FunctxError FunctxTypeError FunctxValueError FunctxArgumentError FunctxIndexError "
        "FunctxOverflowError ConcretizationError FunctxAttributeError UnsupportedError "
        "CacheWarning"
    ),
    "functx.nn": (
        "relu6 sigmoid log_sigmoid silu swish softplus elu leaky_relu gelu logsumexp softmax "
        "log_softmax standardize one_hot"
    ),
    "functx.numpy": "issubdtype promote_types einsum",
    "functx.numpy.linalg": "vector_norm matrix_norm",
    "functx.experimental": "disable_x64",
    "functx.random": "KeyArray",
    "functx.tree_util": (
        "tree_flatten tree_unflatten tree_leaves tree_structure tree_map tree_reduce "
        "treedef_children register_pytree_node_class register_dataclass"
    ),
    "functx.ad_checkpoint": "Offloadable",
}


def _objects():
    for mod, names in NAMES.items():
        m = importlib.import_module(mod)
        for n in names.split():
            yield f"{mod}.{n}", getattr(m, n)


@pytest.mark.parametrize("module", sorted(NAMES))
def test_docstring_examples(module):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for qual, obj in _objects():
        if not qual.startswith(module + ".") or qual.count(".") != module.count(".") + 1:
            continue
        doc = obj.__doc__ or ""
        sections = (
            ("Example:",) if isinstance(obj, type) else ("Arguments:", "Returns:", "Example:")
        )
        for s in sections:
            assert s in doc, (qual, s)
        tests = doctest.DocTestFinder(recurse=False).find(obj, qual, globs={})
        before = runner.failures
        for t in tests:
            runner.run(t)
        assert sum(len(t.examples) for t in tests) > 0, qual
        assert runner.failures == before, qual
