# %% [markdown]
# # A Mamba-style selective scan with associative_scan
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
#    hand-written backward pass and finite differences,
# 3. prints the gradient Jaxpr: the backward pass is made of scans (the transposed tangent
#    recurrence runs the scan backwards), not an O(log n) ladder of slices,
# 4. compiles the layer and its gradient with `functx.jit`, checks them against the eager
#    results, and prints the generated C++ kernel of the scan,
# 5. times the compiled layer and gradient against `jax.jit` in the same run, and checks that
#    both libraries give the same values.
#
# Run it as a script (`python tutorials/04_mamba_selective_scan.py`) or as a notebook through
# jupytext; the docs build executes it.

# %%
import collections
import os
import platform
import re
import time

import numpy as np

import functx
import functx.numpy as fnp
from functx import lax

functx.config.update("jax_enable_x64", True)  # float64 checks, as JAX's x64 mode below

try:  # JAX is only a reference (values and timings); both libraries run on the CPU here
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except ImportError:
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
# ## 4. Compile it: `functx.jit`
# `functx.jit(f)` traces `f` once per argument signature (shapes and dtypes), simplifies the
# Jaxpr, lowers it to a loop IR, fuses it into kernels and compiles them to C++ (gcc, OpenMP,
# SIMD) on the CPU. The first call compiles (a second or two here; the code is then kept on disk,
# see tutorial 05); later calls run the compiled program. The gradient is just another function
# to compile: `jit(grad(loss))`. We switch to float32, the dtype a model runs in, and check the
# compiled layer against the eager one and the compiled gradient against the float64 hand-written
# backward pass of section 1.

# %%
f32 = np.float32
batch, L, D, N = 2, 256, 16, 8
fargs = (
    rng.standard_normal((batch, L, D)).astype(f32),
    rng.uniform(0.1, 1.0, (batch, L, D)).astype(f32),
    -rng.uniform(0.5, 1.5, (D, N)).astype(f32),
    rng.standard_normal((batch, L, N)).astype(f32),
    rng.standard_normal((batch, L, N)).astype(f32),
)
gy32 = rng.standard_normal((batch, L, D)).astype(f32)


def loss32(u, delta, A, B, C):
    return fnp.sum(selective_scan(u, delta, A, B, C) * gy32)


scan_jit = functx.jit(selective_scan)
grad_jit = functx.jit(functx.grad(loss32, argnums=(0, 1, 2, 3, 4)))

t0 = time.perf_counter()
y_jit = scan_jit(*fargs)
t_first = time.perf_counter() - t0
t0 = time.perf_counter()
g_jit = grad_jit(*fargs)
t_first_grad = time.perf_counter() - t0
print(f"first calls (trace + compile + run): layer {t_first:.1f} s, gradient {t_first_grad:.1f} s")
print("compiled output:", y_jit.shape, y_jit.dtype)

np.testing.assert_allclose(y_jit, selective_scan(*fargs), rtol=1e-4, atol=1e-4)
print("compiled layer matches the eager one")
grads64 = reference_backward(*(a.astype(np.float64) for a in fargs), gy32.astype(np.float64))
for name, g, r in zip(names, g_jit, grads64):
    e = np.abs(np.asarray(g) - r).max() / max(1.0, np.abs(r).max())
    print(f"compiled d loss / d {name:5s} (float32): max rel. error vs float64 reference {e:.1e}")
    assert e < 1e-4, name

# %% [markdown]
# ## 5. The generated kernel
# `jit(f).lower(*args).as_text()` returns every stage of the program: the final Jaxpr, the loop
# IR (which node runs in which kernel), one line per kernel, and the C++ source. The gradient
# program has two scan kernels, the forward recurrence and the reversed tangent recurrence. Both
# read `exp(delta * A)`, a costly value, so it is computed once by a pointwise kernel and stored;
# the cheap work around the scans (`delta * B * u`) is fused into the scan's loop instead of being
# written to memory first. We print the kernel list and the C++ of the first scan kernel: on a
# CPU, the scan is a sequential loop over time (`j`) whose state (`acc0`, `acc1`) stays in a
# local array, vectorised (`omp simd`) over the D x N lanes and run in parallel (`omp parallel
# for`) over the batch; it reads the stored `exp(delta * A)` (`v0`) and computes `delta * B * u`
# inside the loop.

# %%
text = grad_jit.lower(*fargs).as_text()
kernels = text[text.index("# kernels") : text.index("# C++")].strip()
print(kernels)


def kernel_source(text, k):
    """The C++ lines of kernel ``k`` in ``lower(...).as_text()``: from its ``// kernel k:``
    comment to the next kernel (or the end of the function)."""
    lines = text[text.index("# C++") :].splitlines()
    start = next(i for i, s in enumerate(lines) if s.strip().startswith(f"// kernel {k}:"))
    out = [lines[start]]
    for s in lines[start + 1 :]:
        if s.strip().startswith(("// kernel ", "if (fx_k", "return ")) or s == "}":
            break
        out.append(s)
    return "\n".join(out)


first_scan = int(re.search(r"kernel (\d+): ascan", kernels).group(1))
scan_cpp = kernel_source(text, first_scan)
print(scan_cpp)
cpp = text[text.index("# C++") :]
assert kernels.count(": ascan") == 2 and "omp simd" in scan_cpp
assert "fx_exp" not in scan_cpp and "fx_exp" in cpp  # (exp stored once, read by both scans)

# %% [markdown]
# ## 6. Timings against JAX
# For the comparison both libraries compile the *same* code: the recurrence written with
# `lax.scan` (one step per time step), the form JAX programs usually use. (XLA is slow to
# compile the gradient of `associative_scan`: on this 2-core machine it takes longer than this
# whole tutorial, which is why JAX is not timed on it here.) functx's `associative_scan`
# version from above is timed too. Each figure is the median of 15 calls after a warm-up call,
# in this run, on the machine named below; both libraries run on its CPU. At these small sizes,
# chosen so that the tutorial runs in seconds, the figures are illustrative: they move with the
# machine's load, and the ratios change with the problem size (`benchmarks/` has the real
# benchmarks).


# %%
def sequential_scan(u, delta, A, B, C, np_=fnp, lax_=lax):
    """The same layer with ``lax.scan``: one step of the recurrence per time step."""
    dA = np_.exp(delta[..., None] * A)
    dBu = delta[..., None] * B[:, :, None, :] * u[..., None]

    def step(h, ab):
        a, b = ab
        h = a * h + b
        return h, h

    xs = (np_.moveaxis(dA, 1, 0), np_.moveaxis(dBu, 1, 0))  # scan over time: axis 0
    _, h = lax_.scan(step, np_.zeros_like(dA[:, 0]), xs)
    return (np_.moveaxis(h, 0, 1) * C[:, :, None, :]).sum(-1)


def machine():
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(s.split(":", 1)[1].strip() for s in fh if s.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} CPUs, {platform.system()}, load average {load:.1f}"


def median_time(fn, calls=15):
    block = jax.block_until_ready if jax is not None else (lambda out: out)
    block(fn())  # warm-up
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        block(fn())  # (JAX dispatches asynchronously: wait for the result)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


seq_jit = functx.jit(sequential_scan)
seq_grad_jit = functx.jit(
    functx.grad(lambda *a: fnp.sum(sequential_scan(*a) * gy32), argnums=(0, 1, 2, 3, 4))
)
np.testing.assert_allclose(seq_jit(*fargs), y_jit, rtol=1e-4, atol=1e-4)
rows = [
    ("associative_scan layer", scan_jit, None),
    ("associative_scan gradient", grad_jit, None),
]
if jax is not None:

    def jax_seq(*a):
        return sequential_scan(*a, np_=jnp, lax_=jax.lax)

    jax_seq_jit = jax.jit(jax_seq)
    jax_seq_grad = jax.jit(
        jax.grad(lambda *a: jnp.sum(jax_seq(*a) * gy32), argnums=(0, 1, 2, 3, 4))
    )
    np.testing.assert_allclose(seq_jit(*fargs), jax_seq_jit(*fargs), rtol=1e-4, atol=1e-4)
    for name, g, r in zip(names, seq_grad_jit(*fargs), jax_seq_grad(*fargs)):
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-3, err_msg=name)
    print("lax.scan form: values and gradients match jax.jit's")
    rows += [
        ("lax.scan layer", seq_jit, jax_seq_jit),
        ("lax.scan gradient", seq_grad_jit, jax_seq_grad),
    ]
else:
    print("JAX is not installed: only functx is timed")
    rows += [("lax.scan layer", seq_jit, None), ("lax.scan gradient", seq_grad_jit, None)]

print("machine:", machine())
print(f"shapes: batch={batch} L={L} D={D} N={N}, float32; median of 15 calls")
for what, ours, theirs in rows:
    t_fx = median_time(lambda: ours(*fargs))
    line = f"{what:26s} functx.jit {t_fx * 1e3:7.3f} ms"
    if theirs is not None:
        t_jax = median_time(lambda: theirs(*fargs))
        line += f"   jax.jit {t_jax * 1e3:7.3f} ms   functx takes {t_fx / t_jax:.2f}x JAX's time"
    print(line)
print("04 tutorial: all checks passed")
