"""Property-based bad input (issue 16): hypothesis draws wrong types, bad axes, negative and huge
sizes, mismatched shapes, non-callables and bad argnums for functx.lax, functx.nn, the
transforms, jit, tree_util and control flow, and every call either works or raises a functx error
(FunctxError; each also derives from the builtin class JAX raises, so ``except ValueError`` still
works). Nothing else may escape: no NumPy, optree or Python internals.

``FUNCTX_BAD_INPUT_EXAMPLES=2000`` runs many more examples per entry point (to hunt for escapes);
the default is the suite's hypothesis profile.
"""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
from functx import lax, nn, tree_util
from functx.errors import FunctxError


class Opaque:
    """An unregistered user class."""


# --- strategies ----------------------------------------------------------------------------------
HUGE = [2**40, 2**62, 2**63 + 5, -(2**62)]  # (sizes fail fast: no multi-GiB allocations)
WEIRD = [
    None,
    "a",
    b"x",
    1.5,
    -0.5,
    float("nan"),
    float("inf"),
    True,
    1 + 2j,
    Opaque(),
    (),
    [],
    (1.0,),
    [0.5, 1],
    {"a": 1},
    {1, 2},
    np.float64(2.5),
    np.array([1, 2]),
    np.array(1.0),
    slice(1),
    Ellipsis,
    object,
]

small_int = st.integers(-4, 4)
loop_bound = st.one_of(small_int, st.sampled_from(WEIRD))  # (no huge trip counts)
bad_scalar = st.one_of(small_int, st.sampled_from(HUGE), st.sampled_from(WEIRD))
bad_int_seq = st.one_of(
    st.lists(small_int, max_size=4).map(tuple),
    st.lists(bad_scalar, max_size=3).map(tuple),
    bad_scalar,
)
bad_shape = st.one_of(
    st.lists(st.integers(-2, 4), max_size=3).map(tuple),
    st.lists(st.sampled_from(HUGE + [0, 1, 2]), min_size=1, max_size=2).map(tuple),
    bad_scalar,
)
DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint8, np.bool_, np.float16]
bad_dtype = st.one_of(
    st.sampled_from(DTYPES),
    st.sampled_from([None, "foo", object, np.complex64, np.str_, "bfloat16", 3, Opaque]),
)


@st.composite
def arrays(draw, max_rank=3):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=max_rank)))
    dt = draw(st.sampled_from(DTYPES))
    n = int(np.prod(shape))
    vals = np.arange(n, dtype=np.float64).reshape(shape) - 1.5
    return vals.astype(dt) if dt is not np.bool_ else vals > 0


anything = st.one_of(
    arrays(), bad_scalar, st.just(Opaque()), st.lists(arrays(max_rank=1), max_size=2), st.just(None)
)


class UserError(Exception):
    """Raised by the drawn user functions themselves (their own bugs are not functx's)."""


def _user(body):
    def fun(*a, **k):
        try:
            return body(*a)
        except FunctxError:
            raise
        except Exception as e:  # noqa: BLE001
            raise UserError(f"{type(e).__name__}: {e}") from e

    return fun


FUNS = [
    _user(lambda *a: 1.0),
    _user(lambda *a: a[0]),
    _user(lambda *a: (a[0] ** 2).sum()),
    _user(lambda *a: a),
    _user(lambda *a: (a[0], a[0])),
    _user(lambda *a: (a[0], a[1])),
]
maybe_fun = st.one_of(st.sampled_from(FUNS), st.sampled_from([3, None, "f", Opaque()]))


# --- entry points: name -> a call built from drawn values ----------------------------------------
def _d(data, strat):
    return data.draw(strat)


ENTRY = {
    # functx.lax
    "lax.cumsum": lambda d: lax.cumsum(
        _d(d, arrays()), axis=_d(d, bad_scalar), reverse=_d(d, st.one_of(st.booleans(), bad_scalar))
    ),
    "lax.cummax": lambda d: lax.cummax(_d(d, arrays()), axis=_d(d, bad_scalar)),
    "lax.cumlogsumexp": lambda d: lax.cumlogsumexp(_d(d, arrays()), axis=_d(d, bad_scalar)),
    "lax.expand_dims": lambda d: lax.expand_dims(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.squeeze": lambda d: lax.squeeze(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.slice_in_dim": lambda d: lax.slice_in_dim(
        _d(d, arrays()), _d(d, bad_scalar), _d(d, bad_scalar), _d(d, bad_scalar), _d(d, bad_scalar)
    ),
    "lax.index_in_dim": lambda d: lax.index_in_dim(
        _d(d, arrays()), _d(d, bad_scalar), _d(d, bad_scalar), _d(d, st.booleans())
    ),
    "lax.integer_pow": lambda d: lax.integer_pow(_d(d, arrays()), _d(d, bad_scalar)),
    "lax.round": lambda d: lax.round(_d(d, arrays()), _d(d, bad_scalar)),
    "lax.iota": lambda d: lax.iota(_d(d, bad_dtype), _d(d, bad_scalar)),
    "lax.broadcasted_iota": lambda d: lax.broadcasted_iota(
        _d(d, bad_dtype), _d(d, bad_shape), _d(d, bad_scalar)
    ),
    "lax.reduce_sum": lambda d: lax.reduce_sum(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.reduce_max": lambda d: lax.reduce_max(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.argmax": lambda d: lax.argmax(_d(d, arrays()), _d(d, bad_scalar), _d(d, bad_dtype)),
    "lax.broadcast_in_dim": lambda d: lax.broadcast_in_dim(
        _d(d, arrays()), _d(d, bad_shape), _d(d, bad_int_seq)
    ),
    "lax.broadcast": lambda d: lax.broadcast(_d(d, arrays()), _d(d, bad_shape)),
    "lax.reshape": lambda d: lax.reshape(_d(d, arrays()), _d(d, bad_shape)),
    "lax.transpose": lambda d: lax.transpose(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.rev": lambda d: lax.rev(_d(d, arrays()), _d(d, bad_int_seq)),
    "lax.slice": lambda d: lax.slice(
        _d(d, arrays()),
        _d(d, bad_int_seq),
        _d(d, bad_int_seq),
        _d(d, st.one_of(st.none(), bad_int_seq)),
    ),
    "lax.dynamic_slice": lambda d: lax.dynamic_slice(
        _d(d, arrays()), _d(d, bad_int_seq), _d(d, bad_shape)
    ),
    "lax.dynamic_slice_in_dim": lambda d: lax.dynamic_slice_in_dim(
        _d(d, arrays()), _d(d, bad_scalar), _d(d, bad_scalar), _d(d, bad_scalar)
    ),
    "lax.dynamic_update_slice": lambda d: lax.dynamic_update_slice(
        _d(d, arrays()), _d(d, arrays()), _d(d, bad_int_seq)
    ),
    "lax.concatenate": lambda d: lax.concatenate(
        _d(d, st.lists(arrays(), max_size=3)), _d(d, bad_scalar)
    ),
    "lax.pad": lambda d: lax.pad(
        _d(d, arrays()),
        _d(d, st.one_of(st.just(0.0), bad_scalar)),
        _d(
            d,
            st.one_of(
                st.lists(st.tuples(small_int, small_int, small_int), max_size=3), bad_int_seq
            ),
        ),
    ),
    "lax.full": lambda d: lax.full(
        _d(d, bad_shape),
        _d(d, st.one_of(st.just(1.0), bad_scalar)),
        _d(d, st.one_of(st.none(), bad_dtype)),
    ),
    "lax.convert_element_type": lambda d: lax.convert_element_type(
        _d(d, anything), _d(d, bad_dtype)
    ),
    "lax.dot_general": lambda d: lax.dot_general(
        _d(d, arrays()),
        _d(d, arrays()),
        _d(
            d,
            st.one_of(
                st.tuples(st.tuples(bad_int_seq, bad_int_seq), st.tuples(bad_int_seq, bad_int_seq)),
                bad_int_seq,
            ),
        ),
    ),
    "lax.add": lambda d: lax.add(_d(d, anything), _d(d, anything)),
    "lax.select": lambda d: lax.select(_d(d, anything), _d(d, arrays()), _d(d, arrays())),
    "lax.clamp": lambda d: lax.clamp(_d(d, anything), _d(d, arrays()), _d(d, anything)),
    "lax.sin": lambda d: lax.sin(_d(d, anything)),
    "lax.reduce": lambda d: lax.reduce(
        _d(d, arrays()),
        0.0,
        _d(d, st.one_of(st.just(lax.add), st.sampled_from([3, None]))),
        _d(d, bad_int_seq),
    ),
    # functx.nn
    "nn.relu": lambda d: nn.relu(_d(d, anything)),
    "nn.softmax": lambda d: nn.softmax(_d(d, arrays()), axis=_d(d, bad_int_seq)),
    "nn.logsumexp": lambda d: nn.logsumexp(_d(d, arrays()), axis=_d(d, bad_int_seq)),
    "nn.log_softmax": lambda d: nn.log_softmax(_d(d, arrays()), axis=_d(d, bad_scalar)),
    "nn.standardize": lambda d: nn.standardize(_d(d, arrays()), axis=_d(d, bad_int_seq)),
    "nn.one_hot": lambda d: nn.one_hot(_d(d, arrays()), _d(d, bad_scalar), axis=_d(d, bad_scalar)),
    "nn.leaky_relu": lambda d: nn.leaky_relu(_d(d, anything), _d(d, bad_scalar)),
    "nn.gelu": lambda d: nn.gelu(_d(d, anything), _d(d, st.booleans())),
    # transforms
    "grad": lambda d: functx.grad(
        _d(d, maybe_fun), argnums=_d(d, bad_int_seq), has_aux=_d(d, st.booleans())
    )(*_d(d, st.lists(anything, max_size=3))),
    "value_and_grad": lambda d: functx.value_and_grad(_d(d, maybe_fun), argnums=_d(d, bad_int_seq))(
        *_d(d, st.lists(anything, max_size=3))
    ),
    "vjp": lambda d: functx.vjp(_d(d, maybe_fun), *_d(d, st.lists(anything, max_size=2)))[1](
        _d(d, anything)
    ),
    "jvp": lambda d: functx.jvp(_d(d, maybe_fun), _d(d, anything), _d(d, anything)),
    "vmap": lambda d: functx.vmap(
        _d(d, maybe_fun),
        in_axes=_d(d, bad_int_seq),
        out_axes=_d(d, bad_int_seq),
        axis_size=_d(d, st.one_of(st.none(), bad_scalar)),
    )(*_d(d, st.lists(anything, max_size=2))),
    "jacfwd": lambda d: functx.jacfwd(_d(d, maybe_fun), argnums=_d(d, bad_int_seq))(
        *_d(d, st.lists(anything, max_size=2))
    ),
    "jacrev": lambda d: functx.jacrev(_d(d, maybe_fun), argnums=_d(d, bad_int_seq))(
        *_d(d, st.lists(anything, max_size=2))
    ),
    "hessian": lambda d: functx.hessian(_d(d, maybe_fun), argnums=_d(d, bad_int_seq))(
        *_d(d, st.lists(anything, max_size=2))
    ),
    "linearize": lambda d: functx.linearize(
        _d(d, maybe_fun), *_d(d, st.lists(anything, max_size=2))
    ),
    "make_jaxpr": lambda d: functx.make_jaxpr(_d(d, maybe_fun))(
        *_d(d, st.lists(anything, max_size=2))
    ),
    # jit: the function and shapes are fixed so that a valid draw reuses one compiled program
    "jit": lambda d: functx.jit(
        _d(d, st.one_of(st.just(_jit_target), st.sampled_from([3, "f"]))),
        static_argnums=_d(d, bad_int_seq),
        static_argnames=_d(d, st.one_of(st.sampled_from(["y", "z", (), ("y",)]), bad_scalar)),
    )(np.ones(3, np.float32), _d(d, st.sampled_from([2, None, Opaque(), "s"]))),
    # tree_util
    "tree_map": lambda d: tree_util.tree_map(
        _d(d, maybe_fun), _d(d, anything), *_d(d, st.lists(anything, max_size=2))
    ),
    "tree_unflatten": lambda d: tree_util.tree_unflatten(
        _d(d, st.one_of(st.just(tree_util.tree_structure([1, (2, 3)])), bad_scalar)),
        _d(d, st.one_of(st.lists(small_int, max_size=4), bad_scalar)),
    ),
    "tree_reduce": lambda d: tree_util.tree_reduce(_d(d, maybe_fun), _d(d, anything)),
    "tree_leaves": lambda d: tree_util.tree_leaves(
        _d(d, anything), is_leaf=_d(d, st.one_of(st.none(), maybe_fun))
    ),
    "register_pytree_node": lambda d: tree_util.register_pytree_node(
        # (a fresh class each time: registering Opaque would change the other entry points)
        _d(d, st.sampled_from([3, "x", None, list, dict, "fresh"])) == "fresh"
        and type("Fresh", (), {})
        or 3,
        _d(d, maybe_fun),
        _d(d, maybe_fun),
    ),
    # control flow
    "cond": lambda d: lax.cond(
        _d(d, anything), _d(d, maybe_fun), _d(d, maybe_fun), *_d(d, st.lists(anything, max_size=2))
    ),
    "switch": lambda d: lax.switch(
        _d(d, anything),
        _d(d, st.one_of(st.lists(maybe_fun, max_size=2), maybe_fun)),
        *_d(d, st.lists(anything, max_size=1)),
    ),
    "scan": lambda d: lax.scan(
        _d(d, maybe_fun),
        _d(d, anything),
        _d(d, anything),
        length=_d(d, st.one_of(st.none(), loop_bound)),
        reverse=_d(d, st.one_of(st.booleans(), bad_scalar)),
    ),
    # (cond_fun never returns True from a drawn function: no endless loops)
    "while_loop": lambda d: lax.while_loop(
        _d(d, st.sampled_from([lambda c: False, 3, None])), _d(d, maybe_fun), _d(d, anything)
    ),
    "fori_loop": lambda d: lax.fori_loop(
        _d(d, loop_bound),
        _d(d, loop_bound),
        _d(d, st.one_of(st.just(lambda i, c: c), maybe_fun)),
        _d(d, anything),
    ),
    "map": lambda d: lax.map(_d(d, maybe_fun), _d(d, anything)),
    "associative_scan": lambda d: lax.associative_scan(
        _d(d, st.one_of(st.just(lax.add), maybe_fun)),
        _d(d, anything),
        reverse=_d(d, st.one_of(st.booleans(), bad_scalar)),
        axis=_d(d, bad_scalar),
    ),
}


def _jit_target(x, y=None):
    return x * 2


_N = int(os.environ.get("FUNCTX_BAD_INPUT_EXAMPLES", "0"))
_many = settings(max_examples=_N) if _N else (lambda f: f)


@pytest.mark.parametrize("name", sorted(ENTRY))
@_many
@given(data=st.data())
def test_only_functx_errors_escape(name, data):
    try:
        ENTRY[name](data)
    except (FunctxError, UserError):
        pass
    except MemoryError:  # a huge but valid size: the machine's limit, not a bad argument
        pass
    except (RecursionError, KeyboardInterrupt):  # pragma: no cover
        raise
    except Exception as e:  # noqa: BLE001 - what we look for: anything else escaping
        raise AssertionError(f"{name}: {type(e).__name__} escaped: {e}") from e
