"""jax.ops.segment_sum/prod/max/min (the end of functx/ops.py) against jax.ops in both x64 modes:
values and dtypes (empty segments hold the identity), num_segments=None, bucket_size, the modes
with out-of-range ids, broadcast data; errors; gradients (jax.grad, finite differences) and vmap.
The compiled backends run them in tests/lowering/test_backend_suite.py's general_gather_scatter."""

import docutil
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from x64util import x64_off

import functx
from functx import ops as fops
from functx.test_util import check_grads

RNG = np.random.default_rng(11)
NAMES = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
IDS = np.array([0, 2, 2, 0, 4, -1, 1, 7, 2], np.int32)  # -1 and 7 out of range; 3 empty
DATA = np.round(RNG.standard_normal((9, 2)) * 3, 1)


def same(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (k, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=str(k))


def _progs(ops, np_, x64):
    out = []
    d64, d8 = np_.asarray(DATA), np_.asarray(DATA.astype(np.int8))
    for name in NAMES:
        f = getattr(ops, name)
        if x64:
            out.append(f(d64, IDS, 6))
            out.append(f(d64[:, 0], IDS, 6, mode="clip"))
            out.append(f(d64, IDS, 5, bucket_size=4))
            out.append(f(d8, IDS.astype(np.uint8), 6, indices_are_sorted=False))
        else:  # (float64 data is float32 here)
            out.append(f(d64, IDS.astype(np.int16), 6, unique_indices=False))
    if x64:
        b = np_.asarray(DATA > 0)
        out += [ops.segment_max(b, IDS, 6), ops.segment_min(b, IDS, 6)]
        out.append(ops.segment_sum(np_.asarray(2.0), IDS, 4))  # scalar data broadcasts
        out.append(ops.segment_sum(np_.ones((1, 3)), IDS[:3].reshape(1, 3), 3))
    return out


@pytest.mark.parametrize("x64", [True, False])
def test_segments_vs_jax(x64):
    def run():
        got = _progs(fops, functx.numpy, x64)
        return got, jax.jit(lambda: _progs(jax.ops, jjnp, x64))()

    if x64:
        got, want = run()
    else:
        with x64_off():
            got, want = run()
    same(got, want)


def test_num_segments_none_and_errors():
    ids = np.array([0, 3, 3, 1])
    # (JAX's default: max(ids) + 1 segments; its eager calls cost seconds, so no JAX call here)
    same([fops.segment_sum(DATA[:4], ids)], [fops.segment_sum(DATA[:4], ids, 4)])
    same([fops.segment_min(DATA[:4, 0], ids)], [fops.segment_min(DATA[:4, 0], ids, 4)])
    bad = [
        lambda o: o.segment_sum([1.0, 2.0], ids[:2], 4),  # a list: TypeError
        lambda o: o.segment_sum(np.ones(4), ids, -1),  # ValueError
        lambda o: o.segment_sum(np.ones(4), ids.astype(np.float32), 4),  # TypeError
        lambda o: o.segment_sum(np.ones(4, bool), ids, 4),  # TypeError
        lambda o: o.segment_sum(np.ones(3), ids, 4),  # ValueError: shapes
        lambda o: o.segment_sum(np.ones(4), ids, 4, mode="nearest"),  # ValueError
        lambda o: o.segment_sum(np.ones(4), ids, 2.5),  # TypeError
    ]
    for fn in bad:
        with pytest.raises((TypeError, ValueError)) as want:
            fn(jax.ops)
        with pytest.raises(type(want.value)):
            fn(fops)
    # under jit the number of segments must be static, as in JAX
    with pytest.raises(functx.errors.ConcretizationTypeError, match="num_segments"):
        functx.jit(lambda d, i: fops.segment_sum(d, i))(np.ones(4), ids)


def test_gradients_and_vmap():
    ids = np.array([0, 2, 2, 0, 3])
    d = DATA[:5].copy()
    d[3] = d[0]  # a tie within segment 0: max/min split the gradient, as JAX does
    w = RNG.standard_normal((4, 2))

    def progs(ops, grad):
        outs = []
        for name in ("segment_sum", "segment_max", "segment_min"):
            outs.append(grad(lambda x: (getattr(ops, name)(x, ids, 4) * w).sum())(d))
        u = np.array([0, 3, 1, 2, 4])  # unique ids: JAX differentiates segment_prod only then
        f = lambda x: (ops.segment_prod(x, u, 5, unique_indices=True) ** 2).sum()  # noqa: E731
        return outs + [grad(f)(d)]

    same(progs(fops, functx.grad), jax.jit(lambda: progs(jax.ops, jax.grad))())
    full = np.array([0, 2, 2, 1, 3])  # (no empty segment, no tie: differentiable everywhere)
    for name in NAMES:
        check_grads(lambda x, n=name: getattr(fops, n)(x, full, 4), (DATA[:5],), 1, modes=("rev",))
    ds = RNG.standard_normal((3, 5, 2))
    got = functx.vmap(lambda x: fops.segment_sum(x, ids, 4, bucket_size=2))(ds)
    same(list(got), [fops.segment_sum(x, ids, 4, bucket_size=2) for x in ds])


def test_docstring_examples_run():
    # (the public names' examples run in tests/test_docstrings.py; any others here)
    for name in NAMES:
        obj = getattr(fops, name)
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in obj.__doc__, (name, section)
        assert docutil.run(obj, name, globs={}, optionflags=0).failed == 0, name


def test_vmap_over_segment_ids():
    ids = np.array([[0, 1, 1, 2, 0], [2, 2, 0, 1, 5]])
    got = functx.vmap(lambda i: fops.segment_max(DATA[:5], i, 3, bucket_size=2))(ids)
    same(list(got), [fops.segment_max(DATA[:5], i, 3, bucket_size=2) for i in ids])
