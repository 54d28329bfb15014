# %% [markdown]
# # Automatic differentiation: grad, jacrev, hessian as Jaxpr rewrites
#
# `functx.grad(f)` is not a tape replayed at run time: it traces `f` into a Jaxpr, rewrites it with
# forward-mode rules (jvp), splits the result into a primal part and a *linear* part (partial
# evaluation), and transposes the linear part into the backward pass. The gradient is therefore an
# ordinary Jaxpr you can print, and every other transform (`vmap`, `grad` again, `jit`) composes
# with it. This tutorial prints the gradient Jaxpr of a small model, checks `grad`, `jacrev` and
# `hessian` against JAX and against finite differences, then compiles the gradient with `jit`
# and times it against the eager one.
#
# Run it as a script (`python tutorials/02_autodiff.py`) or as a notebook through jupytext; the
# docs build executes it.

# %%
import os
import platform
import time

import numpy as np

import functx
import functx.numpy as jnp
from functx import nn
from functx.test_util import check_grads

functx.config.update("jax_enable_x64", True)  # float64 checks below, as JAX's x64 mode


def model(params, x):
    """A two-layer perceptron with a GELU, on a batch of inputs."""
    h = nn.gelu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss(params, x, y):
    """Mean squared error of the model."""
    return jnp.mean((model(params, x) - y) ** 2)


rng = np.random.default_rng(0)
params = {
    "w1": rng.standard_normal((3, 4)) / 2,
    "b1": np.zeros(4),
    "w2": rng.standard_normal((4, 2)) / 2,
    "b2": np.zeros(2),
}
x = rng.standard_normal((5, 3))
y = rng.standard_normal((5, 2))

# %% [markdown]
# ## 1. The gradient is a Jaxpr
# The forward Jaxpr of the loss, then the Jaxpr of its gradient with respect to the parameters.
# The gradient Jaxpr starts with the part of the forward pass the backward pass needs (the
# *residuals*: here the pre-activations and the tanh inside GELU), then runs the transposed
# equations in reverse order: each `dot_general` of the forward pass becomes two (one per operand),
# each broadcast of a bias becomes a `reduce_sum`. Nothing the gradient does not need survives
# dead-code elimination: the loss value itself is not computed.

# %%
forward = functx.make_jaxpr(loss)(params, x, y)
backward = functx.make_jaxpr(functx.grad(loss))(params, x, y)
print(f"forward: {len(forward.eqns)} equations")
print(f"gradient: {len(backward.eqns)} equations")
print(backward)
functx.typecheck_jaxpr(backward)
assert len(backward.eqns) <= 3 * len(forward.eqns)

# %% [markdown]
# A scalar example small enough to read: the derivative of `sin(x) * 2` is `cos(x) * 2`, and the
# Jaxpr says exactly that.

# %%
small = functx.make_jaxpr(functx.grad(lambda v: jnp.sin(v) * 2.0))(np.float32(1.0))
print(small)
assert str(small) == "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul 2.0:f32[] b in (c,) }"

# %% [markdown]
# ## 2. Check against JAX and finite differences
# `grad` (reverse mode) of the loss, `jacrev` of the model's output with respect to the inputs, and
# the `hessian` of the loss with respect to one weight matrix (`jacfwd` of `jacrev`: forward over
# reverse), compared with JAX on the same float64 inputs when JAX is installed. `check_grads` then
# checks first and second derivatives in both modes against central differences, with no reference
# implementation at all.

# %%
g = functx.grad(loss)(params, x, y)
jac = functx.jacrev(model, argnums=1)(params, x)  # d model(params, x)[i, k] / d x[j, l]
hess = functx.hessian(lambda w2: loss({**params, "w2": w2}, x, y))(params["w2"])
print("grad shapes:", {k: v.shape for k, v in g.items()})
print("jacrev shape:", jac.shape, " hessian shape:", hess.shape)
assert jac.shape == (5, 2, 5, 3) and hess.shape == (4, 2, 4, 2)

checks = 0
try:
    import jax
    import jax.numpy as jjnp

    jax.config.update("jax_enable_x64", True)

    def jloss(p, x, y):
        h = jax.nn.gelu(x @ p["w1"] + p["b1"])
        return jjnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    def jmodel(p, x):
        return jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    jg = jax.jit(jax.grad(jloss))(params, x, y)
    for k in params:
        np.testing.assert_allclose(g[k], jg[k], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        jac, jax.jit(jax.jacrev(jmodel, argnums=1))(params, x), rtol=1e-10, atol=1e-12
    )
    jhess = jax.jit(jax.hessian(lambda w2: jloss({**params, "w2": w2}, x, y)))(params["w2"])
    np.testing.assert_allclose(hess, jhess, rtol=1e-10, atol=1e-12)
    checks += 3
    print(f"grad, jacrev and hessian match JAX {jax.__version__} (rtol 1e-10)")
except ImportError:
    print("JAX is not installed; skipped the comparison with it")

check_grads(loss, (params, x, y), order=2, modes=("fwd", "rev"))
checks += 1
print("check_grads: first and second derivatives, forward and reverse, match finite differences")

# %% [markdown]
# ## 3. A closer look: jvp, vjp and the linear Jaxpr
# `jvp` pushes a tangent forward; `vjp` pulls a cotangent back. Their inner products agree because
# the backward pass is the transpose of the forward one: `<vjp(ct), t> == <ct, jvp(t)>`.

# %%
t = {k: rng.standard_normal(v.shape) for k, v in params.items()}
out, t_out = functx.jvp(lambda p: model(p, x), (params,), (t,))
ct = rng.standard_normal(out.shape)
_, f_vjp = functx.vjp(lambda p: model(p, x), params)
(ct_in,) = f_vjp(ct)
lhs = sum(float(np.sum(np.asarray(ct_in[k]) * t[k])) for k in params)
rhs = float(np.sum(ct * np.asarray(t_out)))
print(f"<vjp(ct), t> = {lhs:.12f}\n<ct, jvp(t)> = {rhs:.12f}")
assert abs(lhs - rhs) < 1e-10 * max(1.0, abs(rhs))
checks += 1

# %% [markdown]
# ## 4. Compile the gradient
# A gradient is a Jaxpr like any other, so `jit` compiles it: `functx.jit(functx.grad(loss))`
# traces, differentiates and compiles once per input signature, then runs the compiled program.
# The eager gradient evaluates the same Jaxpr one NumPy call per equation. Each figure is the
# median of 20 calls after a warm-up call, in this run; at this tiny size the figures are
# illustrative (per-call overhead dominates) and move with the machine's load.


# %%
def median_time(f, calls=20):
    f()  # warm-up (the jitted function compiles here)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


grad_loss = functx.grad(loss)
grad_jit = functx.jit(functx.value_and_grad(loss))
value, g_jit = grad_jit(params, x, y)
np.testing.assert_allclose(value, loss(params, x, y), rtol=1e-12)
for k in params:
    np.testing.assert_allclose(g_jit[k], g[k], rtol=1e-10, atol=1e-12)
checks += 1
print("jit(value_and_grad(loss)) matches the eager loss and gradient (float64)")
t_eager = median_time(lambda: grad_loss(params, x, y))
t_jit = median_time(lambda: grad_jit(params, x, y))
print(
    f"eager grad {t_eager * 1e6:.0f} us, jit(value_and_grad) {t_jit * 1e6:.1f} us "
    f"({os.cpu_count()} CPUs, {platform.machine()})"
)

# %%
print(f"02 tutorial: all checks passed ({checks} checks)")
