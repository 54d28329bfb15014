# %% [markdown]
# # Running on a GPU
#
# On a machine with an NVIDIA GPU (`pip install -e ".[gpu]"` adds PyTorch and Triton), functx
# arrays can live on the GPU, eager operations run there, and `jit` compiles a program into
# Triton kernels generated from the same loop IR the CPU backend uses. This tutorial covers:
#
# 1. devices and placement: `devices()`, `device_put`, where results live, the default device;
# 2. Triton kernels: the generated source of a jitted function;
# 3. CUDA graphs: how a jitted program's launches are replayed;
# 4. matrix-product precision: TF32 and `default_matmul_precision`;
# 5. timings, on a real GPU only.
#
# **No GPU?** The tutorial still runs: when no CUDA GPU is visible it sets `TRITON_INTERPRET=1`
# before importing functx, which gives an `InterpretedGpuDevice` whose Triton kernels run in
# Triton's CPU interpreter (slow, one program instance at a time: for tests and for reading the
# generated code, never for timing). The shapes are tiny for that reason.
#
# Run it as a script (`python tutorials/06_gpu.py`) or as a notebook through jupytext; the docs
# build executes it.

# %%
import importlib.util
import os
import platform
import time

import numpy as np


def cuda_gpu_name():
    """The name of the first CUDA GPU torch sees, or None."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


GPU_NAME = cuda_gpu_name()
HAVE_TRITON = importlib.util.find_spec("triton") is not None
if GPU_NAME is None and HAVE_TRITON:
    os.environ["TRITON_INTERPRET"] = "1"  # must be set before triton is first imported

import functx  # noqa: E402
import functx.numpy as jnp  # noqa: E402

print("machine:", platform.machine(), platform.system(), f"{os.cpu_count()} CPUs")
print("CUDA GPU:", GPU_NAME or "none")
print("Triton:", "installed" if HAVE_TRITON else "not installed (pip install -e '.[gpu]')")
print("devices:", functx.devices())

# %% [markdown]
# ## 1. Devices and placement
# `functx.devices()` lists the GPUs when there are any (here, possibly the interpreter's stand-in),
# else the CPU; `functx.devices("cpu")` is always the host. Unlike JAX, **new arrays go to the
# CPU by default even when a GPU is present**; `device_put` moves data, and
# `FUNCTX_DEFAULT_DEVICE=gpu`, `functx.config.update("jax_default_device", dev)` or
# `with functx.default_device(dev):` change the default. An operation runs where its operands
# live, eagerly or compiled, and its result stays there; `np.asarray` copies back to the host,
# explicitly.

# %%
cpu = functx.devices("cpu")[0]
gpus = [d for d in functx.devices() if d.platform == "gpu"]
gpu = gpus[0] if gpus else None
print(f"default device of a new array: {jnp.ones(3).device!r}")
if gpu is None:
    print("no GPU device (and no Triton interpreter): sections 1-4 need one; skipping them")
else:
    print(f"GPU device: {gpu!r} ({gpu.device_kind})")
    x = functx.device_put(np.linspace(-1.0, 2.0, 8, dtype=np.float32), gpu)
    y = jnp.tanh(x) * 2.0  # an eager operation on the GPU
    print(f"x on {x.device!r} | tanh(x) * 2 on {y.device!r}")
    np.testing.assert_allclose(np.asarray(y), np.tanh(np.asarray(x)) * 2.0, rtol=1e-6)

# %% [markdown]
# Arrays holding data are *committed* to their device. Mixing two devices in one operation is an
# error that names the devices, the shapes and your line: functx never copies between the host
# and a GPU behind your back. (Python scalars, and arrays built from scalars alone such as
# `jnp.zeros(3)`, are uncommitted and go with the other operand.)

# %%
if gpu is not None:
    host = functx.device_put(np.ones(8, np.float32), cpu)
    try:
        x + host
    except functx.DeviceError as e:
        print("DeviceError:", e)
    print(f"x + jnp.zeros(8) on {(x + jnp.zeros(8)).device!r} (uncommitted: follows x)")

# %% [markdown]
# ## 2. Triton kernels
# `jit` compiles for the device of its arguments: C++ for the CPU, Triton for a GPU.
# `lower(...).as_text()` then ends with `# Triton` and the generated Python module: a prelude of
# helper functions, one `@triton.jit` function per kernel, and `run`, which allocates the
# temporaries and launches the kernels in order. A float32 matrix product of the small sizes a
# measured table names (`functx/lowering/triton/gemm.py`) is a Triton kernel of its own
# (`k0_gemm` below: a tiled `tl.dot`) that also computes the pointwise work after it (here the
# `tanh` and the scaling) as its epilogue; other products call cuBLAS through torch (`_fx_dot`)
# and the pointwise work after them is one fused Triton kernel (a small matrix-vector product,
# one row or column, is instead a multiply and a sum fused with that work). Below: the kernel
# list, then the source from the first kernel on.


# %%
def layer(v, w):
    return jnp.tanh(v @ w) * 2.0


if gpu is not None:
    w = functx.device_put(np.linspace(-0.5, 0.5, 32, dtype=np.float32).reshape(8, 4), gpu)
    v = jnp.stack([x, x[::-1]])  # (2, 8): a matrix product (one row would be a fused sum)
    layer_jit = functx.jit(layer)
    out = layer_jit(v, w)
    print(f"jit(layer) output on {out.device!r}")
    want = np.tanh(np.asarray(v) @ np.asarray(w)) * 2.0
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-2, atol=1e-2)  # (TF32 on a GPU)
    text = layer_jit.lower(v, w).as_text()
    print(text[text.index("# kernels") : text.index("# Triton")].strip())
    source = text.split("# Triton\n", 1)[1]
    kernels_on = source[source.index("@triton.jit\ndef k") :]
    print(kernels_on)
    assert "tl.store" in kernels_on and "def run(" in kernels_on

# %% [markdown]
# ## 3. CUDA graphs
# Launching kernels one by one costs a few microseconds each on the host. On a real GPU, a jitted
# program of four or more launches records them into a CUDA graph and, from its second or third
# call, replays the graph: one launch for the whole program. A graph reads in place the
# arguments that lie where they lay in the previous call or in the outputs it handed out (a
# training loop's parameters) and copies the others in (a new batch); programs with large inputs
# or outputs read them all in place. Graphs hand out their own output buffers (reused only once
# nothing holds the earlier result). `FUNCTX_CUDA_GRAPHS=0`
# turns graphs off (e.g. to profile kernel by kernel); the Triton interpreter never uses them.

# %%
print("FUNCTX_CUDA_GRAPHS mode:", functx.config.cuda_graphs_mode())

# %% [markdown]
# ## 4. Matrix-product precision: TF32
# As in JAX, float32 products on a GPU take TF32 inputs by default (about three significant
# digits, float32 accumulation: relative errors near 1e-3), which is much faster on tensor cores.
# `with functx.default_matmul_precision("highest"):` (or
# `functx.config.update("jax_default_matmul_precision", "highest")`, or
# `FUNCTX_DEFAULT_MATMUL_PRECISION=highest`) asks for full float32; `jit` compiles again when the
# setting changes, and a product's own `precision=` argument wins over the setting. The choice is
# visible in the generated source: a Triton GEMM's `tl.dot(..., input_precision="tf32")` (its
# operands rounded to TF32 to nearest first, as cuBLAS rounds them), or the last argument of a
# cuBLAS `_fx_dot` call (full float32 products go to cuBLAS). The CPU computes in
# float32 whatever the setting, and so does the interpreter (its products run in torch on the
# CPU): the difference in values shows on a real GPU only.


# %%
def dot_call(text):
    """The line of the generated source that says how the product runs."""
    lines = [s.strip() for s in text.splitlines()]
    return next(s for s in lines if s.startswith("_fx_dot(") or s.startswith("acc = tl.dot("))


if gpu is not None:
    print("default:            ", dot_call(layer_jit.lower(v, w).as_text()))
    with functx.default_matmul_precision("highest"):
        print("precision 'highest':", dot_call(layer_jit.lower(v, w).as_text()))
        exact = layer_jit(v, w)

    def layer_exact(v, w):
        return jnp.tanh(jnp.matmul(v, w, precision="highest")) * 2.0

    print("precision= argument:", dot_call(functx.jit(layer_exact).lower(v, w).as_text()))
    np.testing.assert_allclose(np.asarray(exact), want, rtol=1e-5, atol=1e-6)
    print(
        f"max |TF32 default - 'highest'|: {np.abs(np.asarray(out) - np.asarray(exact)).max():.1e}"
    )

# %% [markdown]
# ## 5. Timings need a GPU
# Timings of GPU code mean something only on a GPU. On a machine with one, this section times
# the jitted layer at a realistic size (median of 20 calls after a warm-up) against `jax.jit` on
# the same GPU when JAX sees one; `benchmarks/gpu.py` and `benchmarks/RESULTS.md` have the full
# GPU benchmarks. Without a GPU it says so and times nothing.

# %%
if GPU_NAME is None:
    print(
        f"No CUDA GPU on this machine ({platform.machine()}, {os.cpu_count()} CPUs): "
        "the kernels above ran in Triton's CPU interpreter, and no GPU timing is shown."
    )
else:
    import torch

    def median_time(fn, calls=20):
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    rng = np.random.default_rng(0)
    big_v = functx.device_put(rng.standard_normal((1024, 1024), np.float32), gpu)
    big_w = functx.device_put(rng.standard_normal((1024, 1024), np.float32), gpu)
    t_fx = median_time(lambda: layer_jit(big_v, big_w))
    print(f"GPU: {GPU_NAME}; (1024, 1024) float32 layer, functx.jit: {t_fx * 1e6:.0f} us")
    try:
        import jax
        import jax.numpy as jjnp

        jgpu = [d for d in jax.devices() if d.platform == "gpu"]
    except (ImportError, RuntimeError):
        jgpu = []
    if jgpu:
        jv, jw = (jax.device_put(np.asarray(a), jgpu[0]) for a in (big_v, big_w))
        jlayer = jax.jit(lambda v, w: jjnp.tanh(v @ w) * 2.0)
        t_jax = median_time(lambda: jlayer(jv, jw).block_until_ready())
        print(f"jax.jit: {t_jax * 1e6:.0f} us; functx takes {t_fx / t_jax:.2f}x JAX's time")
    else:
        print("JAX sees no GPU here: no JAX timing")
print("06 tutorial: all checks passed")
