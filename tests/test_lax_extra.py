"""``functx.lax``'s clz, mulhi, split, tile, collapse, batch_matmul, broadcast_to_rank,
dynamic_update_index_in_dim, reduce_xor, optimization_barrier, empty, stack and unstack
(functx/_laxextra.py) against JAX: values from exact Python/NumPy references, shapes and dtypes
from ``jax.eval_shape`` (tracing only: JAX's eager calls compile), error classes, one C++
program against eager, and derivatives against finite differences."""

from __future__ import annotations

import docutil
import jax
import jax.lax as jlax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx._laxextra as laxextra
import functx.lax as flax
from functx.test_util import check_grads

INTS = [np.dtype(d) for d in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8")]


def _types(f, *args):
    with jax.enable_x64(True):
        return jax.tree_util.tree_leaves(jax.eval_shape(lambda *a: f(jlax, *a), *args))


def compare(f, *args, ref):
    outs = jax.tree_util.tree_leaves(f(flax, *args))
    refs = jax.tree_util.tree_leaves(ref)
    types = _types(f, *args)
    assert len(outs) == len(refs) == len(types)
    for o, r, t in zip(outs, refs, types):
        o = np.asarray(o)
        assert (o.shape, o.dtype) == (t.shape, t.dtype), (o.shape, o.dtype, t)
        np.testing.assert_allclose(o, np.asarray(r), rtol=1e-12)


@settings(max_examples=6)
@given(data=st.data())
def test_clz_and_mulhi_exact(data):
    dt = data.draw(st.sampled_from(INTS), label="dtype")
    info = np.iinfo(dt)
    x = data.draw(hnp.arrays(dt, 6, elements=st.integers(info.min, info.max)), label="x")
    y = data.draw(hnp.arrays(dt, 6, elements=st.integers(info.min, info.max)), label="y")
    width = dt.itemsize * 8
    unsigned = [int(v) % (1 << width) for v in x]
    want_clz = [width - u.bit_length() for u in unsigned]
    want_hi = [(int(a) * int(b)) >> width for a, b in zip(x, y)]  # (floor: the signed high half)
    want_hi = np.array([h % (1 << width) for h in want_hi], np.uint64).astype(dt)
    compare(lambda m, x, y: (m.clz(x), m.mulhi(x, y)), x, y, ref=(np.array(want_clz, dt), want_hi))


def _shapes(m, x, b):
    return [
        *m.split(x, [1, 0, 2], axis=1),
        m.tile(x, (2, 1, 3)),
        m.collapse(x, 1),
        m.collapse(x, 0, 2),
        m.collapse(x, 1, 9),
        m.batch_matmul(b, b.transpose(0, 2, 1)),
        m.broadcast_to_rank(x[0], 4),
        m.broadcast_to_rank(x, 2),
        m.dynamic_update_index_in_dim(x, x[:, 1] * 0, -1, 1),
        m.dynamic_update_index_in_dim(x, x[:1] + 5, 1, 0),
        m.reduce_xor(x.astype(np.int32), (1,)),
        m.reduce_xor(x > 3, (0, 2)),
        m.optimization_barrier((x, b)),
        m.empty((2, 3), np.float32),
        m.stack([x[0], x[1]], axis=-1),
        *m.unstack(x, 2),
    ]


def test_shape_functions():
    x = np.arange(24.0).reshape(2, 3, 4)
    b = np.arange(12.0).reshape(2, 2, 3)
    xi = x.astype(np.int32)
    ref = [
        *np.split(x, [1, 1], axis=1),
        np.tile(x, (2, 1, 3)),
        x.reshape(2, 12),
        x.reshape(6, 4),
        x.reshape(2, 12),
        b @ b.transpose(0, 2, 1),
        x[0][None, None],
        x,
        np.concatenate([x[:, :2], x[:, 2:] * 0], 1),
        np.concatenate([x[:1], x[:1] + 5], 0),
        np.bitwise_xor.reduce(xi, 1),
        np.logical_xor.reduce(np.logical_xor.reduce(x > 3, 0), 1),
        x,
        b,
        np.zeros((2, 3), np.float32),
        np.stack([x[0], x[1]], -1),
        *[x[:, :, i] for i in range(4)],
    ]
    compare(_shapes, x, b, ref=ref)
    with pytest.raises(ValueError, match="Sum of sizes"):
        flax.split(x, [1, 1], axis=1)
    with pytest.raises(TypeError, match="reps length"):
        flax.tile(x, (2,))
    with pytest.raises(ValueError, match="same ndim"):
        flax.batch_matmul(x[0], x)
    with pytest.raises(TypeError, match="clz does not accept dtype"):
        flax.clz(x)
    with pytest.raises(TypeError, match="same dtypes"):
        flax.mulhi(xi, xi.astype(np.int16))
    with pytest.raises(ValueError, match="same shape"):
        flax.stack([x, x[0]])
    with pytest.raises(TypeError, match="logical reduction"):
        flax.reduce_xor(x, (0,))


def test_compiled_and_gradients():
    x = np.arange(24.0).reshape(2, 3, 4) / 10
    b = np.arange(12.0).reshape(2, 2, 3) / 7
    xi = (np.arange(6, dtype=np.int32) - 3) * 1000003

    def f(x, b, xi, i):
        return (
            flax.clz(xi),
            flax.mulhi(xi, xi[::-1]),
            flax.tile(x, (1, 2, 1)),
            flax.dynamic_update_index_in_dim(x, x[:, 0] * 2, i, 1),
            flax.reduce_xor(xi, (0,)),
        )

    for o, e in zip(functx.jit(f)(x, b, xi, -1), f(x, b, xi, -1)):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(e))
    check_grads(lambda x: flax.tile(x, (2, 1, 1)).sum(0) * flax.collapse(x, 0, 2)[0], (x,), 1)
    check_grads(lambda b: flax.batch_matmul(b, b.transpose(0, 2, 1)), (b,), 1, modes=("rev",))
    check_grads(
        lambda x: flax.split(x, [2, 1], axis=1)[0] + flax.stack(flax.unstack(x, 1)[:2], 1),
        (x,),
        1,
        modes=("rev",),
    )


def test_docstrings():
    for name in flax.__all__:
        obj = getattr(flax, name)
        if getattr(obj, "__module__", "") == laxextra.__name__:
            doc = obj.__doc__
            assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
    # (the public names' examples run in tests/test_docstrings.py; the others here)
    assert docutil.run(laxextra).failed == 0
