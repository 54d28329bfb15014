"""``python -m functx.demo``: functx doing its main job, on a fresh machine, in a few seconds.

It traces the loss of a small two-layer MLP classifier (written with ``functx.numpy`` and
``functx.nn``) into a Jaxpr, prints it, evaluates the loss eagerly and through the Jaxpr, and
checks both against NumPy computed in float64. Where the transforms exist (``functx.grad``,
``functx.vmap``, ``functx.jit``) it also prints the transformed Jaxprs and checks the gradient
against central finite differences, the per-example losses against NumPy, and the compiled results
against the eager ones.
Last, it shows what an error inside a traced function looks like.

Exits with status 1 if any check fails.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import functx
import functx.numpy as jnp
from functx import nn
from functx.interpreter import jaxpr_as_fun

N_IN, N_HIDDEN, N_CLASSES, BATCH = 4, 8, 3, 16


# --- the model: a two-layer MLP classifier -------------------------------------------------------
def nll(params, x, label):
    """Negative log-likelihood of ``label`` under the MLP; ``x`` is one example or a batch."""
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    logp = nn.log_softmax(logits, axis=-1)
    return -jnp.sum(nn.one_hot(label, N_CLASSES, dtype=logp.dtype) * logp, axis=-1)


def loss(params, x, labels):
    """Mean cross-entropy of a batch."""
    return jnp.mean(nll(params, x, labels))


# --- the reference: the same model in plain NumPy, float64 ---------------------------------------
def nll_ref(params, x, labels):
    """The per-example negative log-likelihood of the MLP, in NumPy float64 (the reference).

    Arguments:
      params: dict with "w1", "b1", "w2", "b2" (arrays of any float dtype).
      x: inputs of shape (batch, N_IN).
      labels: int class labels of shape (batch,).

    Returns:
      A float64 NumPy array of shape (batch,).

    Example:
      >>> params, x, labels = make_inputs()
      >>> nll_ref(params, x, labels).shape == (BATCH,)
      True
    """
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    h = np.tanh(np.asarray(x, np.float64) @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(logp, np.asarray(labels)[..., None], axis=-1)[..., 0]


def loss_ref(params, x, labels):
    """The mean of ``nll_ref`` over the batch (the reference loss).

    Arguments:
      params, x, labels: as for ``nll_ref``.

    Returns:
      A float64 scalar.

    Example:
      >>> params, x, labels = make_inputs()
      >>> float(loss_ref(params, x, labels)) > 0
      True
    """
    return nll_ref(params, x, labels).mean()


def make_inputs(dtype=np.float32, seed=0):
    """Random parameters, inputs and labels for the demo's MLP.

    Arguments:
      dtype: the float dtype of the parameters and inputs.
      seed: the NumPy random seed.

    Returns:
      ``(params, x, labels)``: a dict of weights and biases, inputs of shape (BATCH, N_IN) and
      int32 labels of shape (BATCH,).

    Example:
      >>> params, x, labels = make_inputs(np.float64, seed=1)
      >>> x.dtype, labels.shape == (BATCH,)
      (dtype('float64'), True)
    """
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN),
        "b1": 0.1 * rng.standard_normal(N_HIDDEN),
        "w2": rng.standard_normal((N_HIDDEN, N_CLASSES)) / np.sqrt(N_HIDDEN),
        "b2": 0.1 * rng.standard_normal(N_CLASSES),
    }
    params = {k: v.astype(dtype) for k, v in params.items()}
    x = rng.standard_normal((BATCH, N_IN)).astype(dtype)
    labels = rng.integers(0, N_CLASSES, BATCH).astype(np.int32)
    return params, x, labels


# --- printing and checking -----------------------------------------------------------------------
class Checks:
    """Counts the comparisons and remembers the ones that failed."""

    def __init__(self):
        self.n = 0
        self.failed: list[str] = []

    def close(self, what: str, got, want, rtol: float, atol: float = 0.0) -> None:
        got_l = functx.tree_util.tree_leaves(got)
        want_l = functx.tree_util.tree_leaves(want)
        self.n += 1
        if len(got_l) != len(want_l):
            self.failed.append(what)
            print(f"  FAIL  {what}: {len(got_l)} leaves, expected {len(want_l)}")
            return
        err, ok = 0.0, True
        for g, w in zip(got_l, want_l):
            g = np.asarray(g, np.float64)
            w = np.asarray(w, np.float64)
            if g.shape != w.shape:
                ok = False
                print(f"  FAIL  {what}: shape {g.shape}, expected {w.shape}")
                continue
            ok = ok and bool(np.allclose(g, w, rtol=rtol, atol=atol))
            scale = np.maximum(np.abs(w), 1e-30)
            err = max(err, float(np.max(np.abs(g - w) / scale, initial=0.0)))
        print(f"  {'ok  ' if ok else 'FAIL'}  {what}  (max rel. error {err:.1e}, rtol {rtol:.0e})")
        if not ok:
            self.failed.append(what)


def section(title: str) -> None:
    """Print a section heading: ``== title ====...``.

    Arguments:
      title: the heading text.

    Returns:
      None.

    Example:
      >>> section("grad")  # doctest: +ELLIPSIS
      <BLANKLINE>
      == grad ===...
    """
    print(f"\n== {title} " + "=" * max(0, 76 - len(title)))


def central_differences(f, params, direction, eps=1e-6):
    """(f(p + eps d) - f(p - eps d)) / 2 eps: the derivative of ``f`` at ``p`` along ``d``."""
    plus = {k: params[k] + eps * direction[k] for k in params}
    minus = {k: params[k] - eps * direction[k] for k in params}
    return (f(plus) - f(minus)) / (2 * eps)


# --- the demo ------------------------------------------------------------------------------------
def main() -> int:
    """Run the demo: trace, transform and jit the MLP, check every result against the NumPy
    reference, print each stage and the checks.

    Returns:
      0 if every check passed, 1 otherwise (the process exit status).

    Example:
      ``python -m functx.demo`` (prints the stages and "all N checks passed").
    """
    t0 = time.perf_counter()
    checks = Checks()
    params, x, labels = make_inputs(np.float32)
    print(
        f"functx {functx.__version__}: a 2-layer MLP classifier "
        f"({N_IN} -> {N_HIDDEN} tanh -> {N_CLASSES} log_softmax), batch of {BATCH}, float32"
    )

    section("1. trace: make_jaxpr(loss)(params, x, labels)")
    closed = functx.make_jaxpr(loss)(params, x, labels)
    print(closed)
    functx.typecheck_jaxpr(closed)
    print(f"  {len(closed.eqns)} equations; typecheck_jaxpr passed")

    section("2. run eagerly, and through the Jaxpr, against NumPy float64")
    want = loss_ref(params, x, labels)
    value = loss(params, x, labels)
    print(f"  loss(params, x, labels) = {float(value):.7f}  (NumPy float64: {want:.7f})")
    checks.close("eager functx.numpy loss vs NumPy float64", value, want, rtol=1e-5)
    leaves = functx.tree_util.tree_leaves((params, x, labels))
    (via_jaxpr,) = jaxpr_as_fun(closed)(*leaves)
    checks.close("eval_jaxpr(traced Jaxpr) vs eager", via_jaxpr, value, rtol=1e-6)

    have = [name for name in ("grad", "vmap", "jit") if hasattr(functx, name)]
    missing = [name for name in ("grad", "vmap", "jit") if name not in have]
    if missing:
        print(f"\n(functx.{', functx.'.join(missing)}: not in this version yet; skipped)")

    if hasattr(functx, "grad"):
        section("3. grad: the gradient is a Jaxpr too")
        print(functx.make_jaxpr(functx.grad(loss))(params, x, labels))
        p64, x64, _ = make_inputs(np.float64)
        g64 = functx.grad(loss)(p64, x64, labels)
        rng = np.random.default_rng(1)
        for i in range(3):
            d = {k: rng.standard_normal(v.shape) for k, v in p64.items()}
            fd = central_differences(lambda p: loss_ref(p, x64, labels), p64, d)
            dot = sum(float(jnp.sum(g64[k] * d[k])) for k in p64)
            checks.close(
                f"float64 grad . d vs central differences (direction {i})",
                dot,
                fd,
                rtol=1e-6,
                atol=1e-9,
            )
        g32 = functx.grad(loss)(params, x, labels)
        checks.close("float32 grad vs float64 grad", g32, g64, rtol=2e-3, atol=1e-5)

    if hasattr(functx, "vmap"):
        section("4. vmap: per-example losses from the one-example function")
        per_example = functx.vmap(nll, in_axes=(None, 0, 0))
        print(functx.make_jaxpr(per_example)(params, x, labels))
        checks.close(
            "vmap(nll) vs NumPy float64",
            per_example(params, x, labels),
            nll_ref(params, x, labels),
            rtol=1e-5,
            atol=1e-6,
        )

    if hasattr(functx, "jit"):
        section("5. jit: compiled, against the eager path")
        jitted = functx.jit(loss)
        checks.close("jit(loss) vs eager", jitted(params, x, labels), value, rtol=1e-5)
        if hasattr(jitted, "lower"):
            text = jitted.lower(params, x, labels).as_text()
            lines = text.splitlines()
            print("\n".join(lines[:40]))
            if len(lines) > 40:
                print(f"  ... ({len(lines) - 40} more lines)")
        if hasattr(functx, "grad"):
            checks.close(
                "jit(grad(loss)) vs eager grad",
                functx.jit(functx.grad(loss))(params, x, labels),
                functx.grad(loss)(params, x, labels),
                rtol=1e-5,
                atol=1e-6,
            )

    section("how an error looks: a Python `if` on a traced value")

    def relu_with_if(v):
        if v > 0:  # not traceable: use jnp.where(v > 0, v, 0) or functx.lax.cond
            return v
        return 0.0 * v

    try:
        functx.make_jaxpr(relu_with_if)(np.float32(1.0))
    except functx.ConcretizationError as e:
        print(f"  {type(e).__name__} (a functx.ConcretizationError): {e}")
    else:
        checks.failed.append("tracing `if v > 0` should raise ConcretizationError")
        print("  FAIL  tracing `if v > 0` did not raise")

    elapsed = time.perf_counter() - t0
    print()
    if checks.failed:
        print(
            f"functx demo: {len(checks.failed)} FAILED of {checks.n} checks: "
            + "; ".join(checks.failed)
            + f" ({elapsed:.1f}s)"
        )
        return 1
    print(f"functx demo: all {checks.n} checks passed ({elapsed:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
