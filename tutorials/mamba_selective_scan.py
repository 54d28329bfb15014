# %% [markdown]
# # A Mamba-style selective scan with `associative_scan`
#
# Mamba's selective state-space layer runs, for every batch element `b`, channel `d` and state
# dimension `n`, the linear recurrence
#
#     h_t = exp(delta_t A) * h_{t-1} + delta_t B_t u_t,        y_t = sum_n h_t C_t
#
# whose coefficients depend on the input (that is the "selective" part, and why it is not a
# convolution). A linear recurrence is an associative scan over affine maps
# `(a1, b1), (a2, b2) -> (a1 a2, a2 b1 + b2)`, so `functx.lax.associative_scan` computes all `h_t`
# at once. This tutorial:
#
# 1. writes the layer in plain functx (the same code runs with `jax.numpy`),
# 2. checks values and gradients (w.r.t. u, delta, A, B, C) against a float64 NumPy loop with a
#    hand-written backward pass, finite differences, and JAX,
# 3. prints the gradient Jaxpr: the backward pass is made of scans (the transposed tangent
#    recurrence runs the scan backwards), not an O(log n) ladder of slices,
# 4. times the eager path.
#
# Run it as a script (`python tutorials/mamba_selective_scan.py`); the tests execute it.

# %%
import collections
import time

import numpy as np

import functx
import functx.numpy as fnp
from functx import lax

functx.config.update("jax_enable_x64", True)  # float64 checks, as JAX's x64 mode below

try:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except ImportError:  # JAX is only a reference
    jax = None


def selective_scan(u, delta, A, B, C, np_=fnp, lax_=lax):
    """u, delta: (batch, L, D); A: (D, N); B, C: (batch, L, N) -> y: (batch, L, D)."""
    dA = np_.exp(delta[..., None] * A)  # (batch, L, D, N): the per-step decay
    dBu = delta[..., None] * B[:, :, None, :] * u[..., None]  # (batch, L, D, N): the input

    def combine(first, second):  # compose h -> a1 h + b1, then h -> a2 h + b2
        a1, b1 = first
        a2, b2 = second
        return a1 * a2, a2 * b1 + b2

    _, h = lax_.associative_scan(combine, (dA, dBu), axis=1)  # h_t for every t at once
    return (h * C[:, :, None, :]).sum(-1)


batch, L, D, N = 2, 12, 3, 4
rng = np.random.default_rng(0)
u = rng.standard_normal((batch, L, D))
delta = rng.uniform(0.1, 1.0, (batch, L, D))  # (softplus of a projection, in Mamba)
A = -rng.uniform(0.5, 1.5, (D, N))  # negative: a decaying state
B = rng.standard_normal((batch, L, N))
C = rng.standard_normal((batch, L, N))
args = (u, delta, A, B, C)
names = ("u", "delta", "A", "B", "C")

y = selective_scan(*args)
print("y:", y.shape, y.dtype)

# %% [markdown]
# ## 1. The reference: a float64 NumPy loop and its backward pass, by hand
# The forward pass keeps every `h_t`. The backward pass runs the recurrence the other way:
# `g_t = dL/dh_t = gy_t C_t + exp(delta_{t+1} A) g_{t+1}`, and each step's coefficients get their
# share of `g_t`.


# %%
def reference_forward(u, delta, A, B, C):
    batch, L, D = u.shape
    hs = np.zeros((batch, L, D, A.shape[1]))
    h = np.zeros((batch, D, A.shape[1]))
    for t in range(L):
        dA = np.exp(delta[:, t, :, None] * A)
        dBu = delta[:, t, :, None] * B[:, t, None, :] * u[:, t, :, None]
        h = dA * h + dBu
        hs[:, t] = h
    return (hs * C[:, :, None, :]).sum(-1), hs


def reference_backward(u, delta, A, B, C, gy):
    """Gradients of sum(selective_scan(...) * gy) w.r.t. (u, delta, A, B, C)."""
    _, hs = reference_forward(u, delta, A, B, C)
    du, ddelta, dA_param = np.zeros_like(u), np.zeros_like(delta), np.zeros_like(A)
    dB, dC = np.zeros_like(B), np.zeros_like(C)
    g_next = np.zeros_like(hs[:, 0])  # dL/dh_{t+1} times the decay of step t+1
    for t in reversed(range(L)):
        dC[:, t] = np.einsum("bd,bdn->bn", gy[:, t], hs[:, t])
        g = gy[:, t, :, None] * C[:, t, None, :] + g_next  # dL/dh_t
        dA = np.exp(delta[:, t, :, None] * A)
        h_prev = hs[:, t - 1] if t > 0 else np.zeros_like(g)
        g_dA, g_dBu = g * h_prev, g  # h_t = dA h_{t-1} + dBu
        ddelta[:, t] += (g_dA * dA * A).sum(-1)
        dA_param += (g_dA * dA * delta[:, t, :, None]).sum(0)
        ddelta[:, t] += (g_dBu * B[:, t, None, :] * u[:, t, :, None]).sum(-1)
        du[:, t] += (g_dBu * delta[:, t, :, None] * B[:, t, None, :]).sum(-1)
        dB[:, t] += (g_dBu * delta[:, t, :, None] * u[:, t, :, None]).sum(1)
        g_next = dA * g
    return du, ddelta, dA_param, dB, dC


y_ref, _ = reference_forward(*args)
err = np.abs(np.asarray(y) - y_ref).max()
print(f"forward: max |functx - NumPy loop| = {err:.2e}")
assert err < 1e-12

# %% [markdown]
# ## 2. Gradients
# `functx.grad` differentiates through the scan. The loss is `sum(y * gy)` for a fixed random
# cotangent `gy`, so its gradient is exactly the vector-Jacobian product the reference computes.

# %%
gy = rng.standard_normal(y_ref.shape)


def loss(u, delta, A, B, C):
    return fnp.sum(selective_scan(u, delta, A, B, C) * gy)


grads = functx.grad(loss, argnums=(0, 1, 2, 3, 4))(*args)
grads_ref = reference_backward(*args, gy)
for name, g, r in zip(names, grads, grads_ref):
    e = np.abs(np.asarray(g) - r).max() / max(1.0, np.abs(r).max())
    print(f"d loss / d {name:5s}: max rel. error vs hand-written backward = {e:.2e}")
    assert e < 1e-10, name

# The hand-written backward itself, against central finite differences on a few entries.
eps = 1e-6
for i, (name, x) in enumerate(zip(names, args)):
    for flat in rng.choice(x.size, 3, replace=False):
        idx = np.unravel_index(flat, x.shape)
        hi, lo = [a.copy() for a in args], [a.copy() for a in args]
        hi[i][idx] += eps
        lo[i][idx] -= eps
        fd = (reference_forward(*hi)[0] * gy).sum() - (reference_forward(*lo)[0] * gy).sum()
        fd /= 2 * eps
        assert abs(fd - grads_ref[i][idx]) < 1e-6 * max(1.0, abs(fd)), (name, idx)
print("hand-written backward matches finite differences")

# %% [markdown]
# The same function with `jax.numpy` and `jax.lax` is the other reference.

# %%
if jax is not None:

    def jax_loss(u, delta, A, B, C):
        return jnp.sum(selective_scan(u, delta, A, B, C, np_=jnp, lax_=jax.lax) * gy)

    jy = jax.jit(lambda *a: selective_scan(*a, np_=jnp, lax_=jax.lax))(*args)
    jgrads = jax.jit(jax.grad(jax_loss, argnums=(0, 1, 2, 3, 4)))(*args)
    assert np.abs(np.asarray(y) - np.asarray(jy)).max() < 1e-12
    for name, g, r in zip(names, grads, jgrads):
        assert np.allclose(np.asarray(g), np.asarray(r), rtol=1e-10, atol=1e-12), name
    print("values and gradients match JAX")
else:
    print("JAX is not installed: skipped the JAX comparison")

# %% [markdown]
# ## 3. The gradient Jaxpr is made of scans
# The forward pass is one `associative_scan` equation. Its derivative is another: the combine is
# lane-wise, so the tangent obeys an affine recurrence `dh_t = a_t dh_{t-1} + db_t` with
# coefficients from the combine's jvp, which is again an associative scan of the same length; its
# transpose (reverse mode) is that scan run backwards (`reverse=True`). No equation count depends
# on L: compare the Jaxprs for L = 12 and L = 192.


# %%
def count(jaxpr, counts=None):
    counts = collections.Counter() if counts is None else counts
    for e in jaxpr.eqns:
        counts[e.prim.name] += 1
        for p in e.params.values():
            if isinstance(p, functx.ClosedJaxpr):
                count(p.jaxpr, counts)
    return counts


grad_fn = functx.grad(loss, argnums=(0, 1, 2, 3, 4))
closed = functx.make_jaxpr(grad_fn)(*args)
print(closed)
scans = [e for e in closed.eqns if e.prim.name == "associative_scan"]
for e in scans:
    print(
        f"associative_scan reverse={e.params['reverse']} over {e.outvars[0].aval.str_short()}"
        f"{' (the transposed tangent scan)' if e.params['affine'] else ''}"
    )
c_small = count(closed.jaxpr)
print(
    f"L={L}: {c_small['associative_scan']} associative_scan equations, "
    f"{c_small['slice']} slice equations, {len(closed.eqns)} equations in all"
)

L_big = 192
big = (
    rng.standard_normal((batch, L_big, D)),
    rng.uniform(0.1, 1.0, (batch, L_big, D)),
    A,
    rng.standard_normal((batch, L_big, N)),
    rng.standard_normal((batch, L_big, N)),
)
gy = rng.standard_normal((batch, L_big, D))  # (loss reads gy; its shape follows L)
c_big = count(functx.make_jaxpr(grad_fn)(*big).jaxpr)
print(
    f"L={L_big}: {c_big['associative_scan']} associative_scan equations, "
    f"{c_big['slice']} slice equations"
)
assert c_small == c_big and c_small["associative_scan"] >= 2
assert any(e.params["reverse"] and e.params["affine"] for e in scans)

# %% [markdown]
# ## 4. Time the eager path
# Eagerly, each associative_scan runs O(log L) vectorised NumPy passes. A plain NumPy loop over L
# is the baseline (a jitted backend would emit one scan kernel; see `benchmarks/scan.py`).


# %%
def best_of(fn, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


t_fx = best_of(lambda: selective_scan(*big))
t_np = best_of(lambda: reference_forward(*big))
t_fx_grad = best_of(lambda: grad_fn(*big))
t_np_grad = best_of(lambda: reference_backward(*big, gy))
print(f"forward  L={L_big}: functx eager {t_fx * 1e3:7.2f} ms   NumPy loop {t_np * 1e3:7.2f} ms")
print(
    f"gradient L={L_big}: functx eager {t_fx_grad * 1e3:7.2f} ms   "
    f"NumPy hand-written {t_np_grad * 1e3:7.2f} ms"
)
print("mamba tutorial: all checks passed")
