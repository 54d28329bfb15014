"""The per-example outer-product rewrite (``functx/transforms/outer_products.py``) that ``jit``
applies: DP-SGD's clipped gradient sum (examples/dp_sgd_data_parallel.py) never forms the
(B, n, m) per-example weight gradients, and computes what the unrewritten program and JAX
compute; programs where another reader needs the outer product are left as they are."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx.core import typecheck_jaxpr
from functx.interpreter import eval_jaxpr
from functx.test_util import check_grads
from functx.transforms import passes
from functx.transforms.outer_products import factor_outer_products

jax = pytest.importorskip("jax")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import dp_sgd_data_parallel as ex  # noqa: E402

SIZES, B = (5, 6, 3), 4  # a 5-6-3 tanh MLP, 4 examples


def _problem(dtype):
    rng = np.random.default_rng(0)
    params = ex.init_params(rng, SIZES)
    x, y = ex.make_batch(rng, B, d_in=SIZES[0], classes=SIZES[-1])
    cast = lambda t: functx.tree_util.tree_map(lambda a: np.asarray(a, dtype), t)  # noqa: E731
    return cast(params), np.asarray(x, dtype), y


def _clipped(M, clip=0.5):
    return lambda p, x, y: ex.clipped_grad_sum(M, p, x, y, clip)


def _outer_shaped(closed):
    """The values of ``closed`` shaped like per-example weight gradients: (..., B, n, m)."""
    weights = {tuple(sorted(w)) for w in zip(SIZES[:-1], SIZES[1:])}
    return [
        (e.prim.name, v.aval.shape)
        for e in closed.jaxpr.eqns
        for v in e.outvars
        if v.aval.ndim >= 3
        and v.aval.shape[-3] == B
        and tuple(sorted(v.aval.shape[-2:])) in weights
    ]


def _close(got, want, tol):
    for g, w in zip(functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def test_the_clipped_sum_forms_no_outer_product_and_equals_the_unrewritten_program():
    params, x, y = _problem(np.float64)
    closed = passes.simplify(functx.make_jaxpr(_clipped(functx))(params, x, y))
    assert len(_outer_shaped(closed)) == 2 * (len(SIZES) - 1)  # dot_general, transpose per layer
    rewritten = factor_outer_products(closed)
    typecheck_jaxpr(rewritten)
    assert _outer_shaped(rewritten) == [], str(rewritten)
    # each weight's clipped sum is one plain product over the examples, in its own layout
    weights = set(zip(SIZES[:-1], SIZES[1:]))
    sums = [e for e in rewritten.jaxpr.eqns if e.outvars[0].aval.shape in weights]
    assert [e.prim.name for e in sums] == ["dot_general"] * len(weights), str(rewritten)
    assert all(e.params["dimension_numbers"] == (((0,), (0,)), ((), ())) for e in sums)
    leaves, tree = functx.tree_util.tree_flatten((params, x, y))
    want = eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
    got = eval_jaxpr(rewritten.jaxpr, rewritten.consts, *leaves)
    _close(got, want, 1e-13)

    # gradients of the rewritten program itself, against finite differences
    def run(p):
        outs = eval_jaxpr(rewritten.jaxpr, rewritten.consts, *functx.tree_util.tree_leaves(p), x, y)
        return sum(fnp.sum(o * o) for o in outs)

    check_grads(run, (params,), order=1, modes=("rev",))
    _close(got, jax.jit(_clipped(jax))(params, x, y), 1e-13)

    # the gradient of a function of the clipped sum: its backward pass reads the outer products
    # (adds cotangents to them), so they are left as they are
    def objective(p):
        return sum(fnp.sum(g * g) for g in functx.tree_util.tree_leaves(_clipped(functx)(p, x, y)))

    grad_of = passes.simplify(functx.make_jaxpr(functx.grad(objective))(params))
    assert _outer_shaped(grad_of) and factor_outer_products(grad_of) is grad_of


def test_float32_in_the_default_mode_and_under_vmap():
    params, x, y = _problem(np.float32)
    xs, ys = np.stack([x, x[::-1]]), np.stack([y, y[::-1]])

    def both(M):
        # (vmap over two groups of examples: the outer products have two batch dimensions)
        vm = M.vmap(_clipped(M), in_axes=(None, 0, 0))
        return lambda p, x, y, xs, ys: (_clipped(M)(p, x, y), vm(p, xs, ys))

    with x64_off():
        ref = jax.jit(both(jax))(params, x, y, xs, ys)
        low = functx.jit(both(functx)).lower(params, x, y, xs, ys)
        assert _outer_shaped(low.jaxpr) == []
        got = low.compile()(params, x, y, xs, ys)
        assert [np.asarray(g).dtype for g in functx.tree_util.tree_leaves(got)] == [
            np.asarray(r).dtype for r in jax.tree_util.tree_leaves(ref)
        ]
        _close(got, ref, 2e-6)


def _left_alone(f, *args):
    closed = passes.simplify(functx.make_jaxpr(f)(*args))
    return factor_outer_products(closed) is closed


def test_it_does_not_fire_when_the_outer_product_is_needed():
    rng = np.random.default_rng(1)
    a, d = rng.standard_normal((B, 5)), rng.standard_normal((B, 3))
    s, w = rng.standard_normal(B), rng.standard_normal(3)
    outer = lambda a, d: fnp.einsum("bi,bj->bij", a, d)  # noqa: E731

    def norm_and_sum(a, d, s):
        v = outer(a, d)
        return fnp.sum(v**2, axis=(1, 2)), fnp.tensordot(s, v, 1)

    assert not _left_alone(norm_and_sum, a, d, s)  # (the case that fires)
    # another reader: the per-example values are an output, or are scaled elementwise
    assert _left_alone(lambda a, d, s: (norm_and_sum(a, d, s), outer(a, d)), a, d, s)
    assert _left_alone(lambda a, d, s: (norm_and_sum(a, d, s), 2.0 * outer(a, d)), a, d, s)
    # a contraction over a non-batch axis; a norm over the batch axis too
    assert _left_alone(lambda a, d, s: (norm_and_sum(a, d, s), outer(a, d) @ w), a, d, s)
    assert _left_alone(lambda a, d: fnp.sum(outer(a, d) ** 2), a, d)
    # a product with a full array is not an outer product
    full = rng.standard_normal((B, 5, 3))
    assert _left_alone(lambda a, full: fnp.sum((a[:, :, None] * full) ** 2, axis=(1, 2)), a, full)
    # a product contracting a real (size 5) axis is not an outer product
    assert _left_alone(lambda a, d: fnp.sum(fnp.einsum("bi,bi->b", a, a) ** 2), a, d)


_FORMS = {
    "mul": lambda v, s: (fnp.sum(v * v, axis=(1, 2)), fnp.tensordot(s, v, 1)),
    "converted": lambda v, s: fnp.sum(v.astype(np.float64) ** 2, axis=(2, 1)),
    "layout": lambda v, s: fnp.tensordot(s, v.transpose(0, 2, 1).reshape(B, -1), 1),
    "operand_order": lambda v, s: fnp.tensordot(v.transpose(0, 2, 1), s, axes=([0], [0])),
    "vmapped": None,  # "mul" under vmap over two groups of examples
    "broadcasts": None,  # "mul" of a[:, None, :] * d[:, :, None]
}


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_the_forms_it_rewrites(form):
    rng = np.random.default_rng(3)
    a, d, s = rng.standard_normal((B, 5)), rng.standard_normal((B, 3)), rng.standard_normal(B)
    a, d, s = (t.astype(np.float32) for t in (a, d, s))

    def f(a, d, s):
        broadcasts = form == "broadcasts"
        v = a[:, None, :] * d[:, :, None] if broadcasts else fnp.einsum("bi,bj->bij", a, d)
        return (_FORMS[form] or _FORMS["mul"])(v, s)

    if form == "vmapped":
        f = functx.vmap(f)
        a, d, s = (np.stack([t, 2 * t]) for t in (a, d, s))
    closed = passes.simplify(functx.make_jaxpr(f)(a, d, s))
    rewritten = factor_outer_products(closed)
    assert rewritten is not closed
    typecheck_jaxpr(rewritten)
    assert not [e for e in rewritten.jaxpr.eqns if e.outvars[0].aval.size >= B * 15]
    want = eval_jaxpr(closed.jaxpr, closed.consts, a, d, s)
    got = eval_jaxpr(rewritten.jaxpr, rewritten.consts, a, d, s)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def _one_layer(M):
    """Per-example gradients of one linear layer, their squared norms and an s-weighted sum."""

    def f(w, a, s):
        g = M.grad(lambda w, a: 0.5 * M.numpy.sum((a @ w) ** 2))
        per = M.vmap(g, in_axes=(None, 0))(w, a)
        return M.numpy.sum(per.reshape(per.shape[0], -1) ** 2, 1), M.numpy.tensordot(s, per, 1)

    return f


def test_the_triton_backend_runs_the_rewritten_program(monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from functx.devices import device as placement

    rng = np.random.default_rng(2)
    args = (rng.standard_normal((5, 3)), rng.standard_normal((B, 5)), rng.standard_normal(B))
    args = tuple(a.astype(np.float32) for a in args)
    want = jax.jit(_one_layer(jax))(*args)
    if "TRITON_INTERPRET" not in os.environ:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    # (the stand-in GPU exists only under TRITON_INTERPRET=1: look for GPUs again, then restore)
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)
    gpu = functx.devices("gpu")[0]
    on_gpu = [functx.device_put(a, gpu) for a in args]
    with functx.default_matmul_precision("highest"):
        low = functx.jit(_one_layer(functx), backend="triton").lower(*on_gpu)
        assert not [e for e in low.jaxpr.jaxpr.eqns if e.outvars[0].aval.shape == (B, 5, 3)]
        got = [np.asarray(functx.device_get(o)) for o in low.compile()(*on_gpu)]
    _close(got, want, 2e-5)
