"""``functx.checkpoint``/``remat`` and ``functx.ad_checkpoint``: what the backward pass keeps under
each policy (the residual lists of ``saved_residuals`` against JAX's for the same function), that
the values and gradients do not change (eagerly, under ``jit``, ``vmap``, nested ``grad``, in a
``scan`` body), and that the compiled backward pass recomputes."""

from __future__ import annotations

import doctest
import re

import docutil
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import ad_checkpoint as fck
from functx.lowering import schedule

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import ad_checkpoint as jck  # noqa: E402
from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals  # noqa: E402

rng = np.random.default_rng(0)
W1 = rng.standard_normal((3, 4)).astype(np.float32)
W2 = rng.standard_normal((4, 2)).astype(np.float32)
X = rng.standard_normal((2, 3)).astype(np.float32)


def _mlp(np_, ck):
    def f(W1, W2, x):
        h = ck.checkpoint_name(np_.sin(x @ W1), "h")
        z = np_.tanh(h @ W2)
        return (z * z).sum()

    return f


F, J = _mlp(fnp, fck), _mlp(jnp, jck)


def _policies(p, ck):
    return {
        "default": None,
        "nothing": p.nothing_saveable,
        "dots": p.dots_saveable,
        "dots_no_batch": p.dots_with_no_batch_dims_saveable,
        "only_h": p.save_only_these_names("h"),
        "both": p.save_from_both_policies(p.dots_saveable, p.save_only_these_names("h")),
        "everything": p.everything_saveable,
        "all_names_but_h": p.save_any_names_but_these("h"),
        "enum": lambda prim, *_, **__: ck.Saveable if prim.name == "dot_general" else ck.Recompute,
    }


def _kinds(res):
    """(type, where from) of each residual: an argument's name, a primitive or a name."""
    out = []
    for aval, src in res:
        m = re.match(r"from the argument (\w+)|output of (\w+)|named '(\w+)'", src)
        assert m, src
        out.append((tuple(aval.shape), str(np.dtype(aval.dtype)), m.group(0).split(" from")[0]))
    return sorted(out)


def test_policies_keep_what_jax_keeps():
    fp = _policies(functx.checkpoint_policies, fck)
    jp = _policies(jax.checkpoint_policies, jck)
    counts = {}
    for name in fp:
        got = fck.saved_residuals(functx.checkpoint(F, policy=fp[name]), W1, W2, X)
        want = jax_saved_residuals(jax.checkpoint(J, policy=jp[name]), W1, W2, X)
        counts[name] = len(got)
        if name == "everything":  # the same number; which primal values the jvps read differs
            assert len(got) == len(want), (got, want)
        else:
            assert _kinds(got) == _kinds(want), name
    # the policies really change what is kept: arguments only, then the products, then more
    assert counts["nothing"] == counts["default"] == 3
    assert counts["dots"] == 5 and counts["only_h"] == 4 and counts["both"] == 6


def test_values_and_gradients_do_not_change():
    g0 = functx.grad(F, argnums=(0, 1))(W1, W2, X)
    jg = jax.jit(jax.grad(J, argnums=(0, 1)))(W1, W2, X)
    np.testing.assert_allclose(g0[0], jg[0], rtol=2e-5, atol=1e-6)
    for name, pol in _policies(functx.checkpoint_policies, fck).items():
        ck = functx.checkpoint(F, policy=pol)
        assert float(ck(W1, W2, X)) == pytest.approx(float(F(W1, W2, X)), rel=1e-6)
        g = functx.grad(ck, argnums=(0, 1))(W1, W2, X)
        for a, b in zip(g, g0):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    # vmap of grad, and nested grad (hessian through the recomputation)
    ck = functx.remat(F, policy=functx.checkpoint_policies.dots_saveable)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(
        functx.vmap(functx.grad(ck), (None, None, 0))(W1, W2, xs),
        functx.vmap(functx.grad(F), (None, None, 0))(W1, W2, xs),
        rtol=1e-5,
        atol=1e-6,
    )
    h = functx.hessian(lambda x: functx.checkpoint(F)(W1, W2, x))(X)
    h0 = functx.hessian(lambda x: F(W1, W2, x))(X)  # (test_grad.py checks hessian against JAX)
    np.testing.assert_allclose(h, h0, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("common_values", [False, True])
def test_jit_backward_pass_recomputes(common_values, monkeypatch):
    # (``schedule.common_values`` must not read the recomputed forward pass from the first one)
    monkeypatch.setattr(schedule, "COMMON_VALUES", common_values)
    ck = functx.checkpoint(F)
    jaxpr = str(functx.make_jaxpr(functx.value_and_grad(ck))(W1, W2, X))
    assert "differentiated=True" in jaxpr
    assert jaxpr.count("= sin ") == 2  # the forward pass's, and the backward pass's again
    assert str(functx.make_jaxpr(functx.value_and_grad(F))(W1, W2, X)).count("= sin ") == 1
    jg = functx.jit(functx.value_and_grad(ck, argnums=(0, 1, 2)))
    text = jg.lower(W1, W2, X).as_text()
    loop_ir = text.split("# loop IR")[1].split("# kernels")[0]
    assert loop_ir.count("sin(") == 2  # recomputed in the compiled program, not kept
    v, g = jg(W1, W2, X)
    v0, g0 = functx.value_and_grad(F, argnums=(0, 1, 2))(W1, W2, X)
    assert float(v) == pytest.approx(float(v0), rel=1e-6)
    for a, b in zip(g, g0):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _scan_loss(np_, lax, ck, body_ck):
    def body(c, w):
        return np_.tanh(np_.sin(c @ w) * 2.0), None

    def loss(ws, c):
        b = ck(body) if body_ck else body
        c, _ = lax.scan(b, c, ws)
        return (c * c).sum()

    return loss


def test_remat_scan_body_like_jax():
    ws = (rng.standard_normal((4, 3, 3)) / 2).astype(np.float32)
    c = rng.standard_normal((2, 3)).astype(np.float32)
    counts, grads = [], []
    for body_ck in (False, True):
        f = _scan_loss(fnp, functx.lax, functx.checkpoint, body_ck)
        j = _scan_loss(jnp, jax.lax, jax.checkpoint, body_ck)
        got = fck.saved_residuals(f, ws, c)
        want = jax_saved_residuals(j, ws, c)
        counts.append(len(got))
        if body_ck:  # the stacked carries and the weights only, as in JAX
            assert _kinds(got) == _kinds(want)
        grads.append(functx.grad(f, argnums=(0, 1))(ws, c))
    for a, b in zip(*grads):  # (tests/control checks scan's gradients against JAX)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    jg = functx.jit(functx.grad(f))(ws, c)
    np.testing.assert_allclose(jg, grads[1][0], rtol=1e-5, atol=1e-6)
    assert counts[1] < counts[0]


def test_effects_are_replayed_by_the_recomputation(capsys):
    f = functx.checkpoint(lambda x: (functx.debug.print("p {}", x), fnp.sin(x))[1])
    for run in (functx.grad(f), functx.jit(functx.grad(f))):
        run(1.0)
        assert capsys.readouterr().out == "p 1.0\np 1.0\n"  # (what JAX 0.10.2 prints)


def test_static_argnums_print_and_docstrings(capsys):
    def f(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x.sum()

    ck = functx.checkpoint(f, static_argnums=(1,))
    np.testing.assert_allclose(functx.grad(ck)(X, 3), functx.grad(lambda x: f(x, 3))(X), rtol=1e-6)
    fck.print_saved_residuals(functx.checkpoint(F), W1, W2, X)
    assert capsys.readouterr().out.splitlines() == [
        "f32[3,4] from the argument W1",
        "f32[4,2] from the argument W2",
        "f32[2,3] from the argument x",
    ]
    for obj in (
        functx.checkpoint,
        fck.checkpoint_name,
        fck.saved_residuals,
        fck.print_saved_residuals,
    ):
        # (the public names' examples run in tests/test_docstrings.py; the others here)
        globs = {"functx": functx, "np": np}
        assert docutil.run(obj, globs=globs, optionflags=doctest.ELLIPSIS).failed == 0, obj
    # (the primitives: checkpoint, and name for checkpoint_name)
