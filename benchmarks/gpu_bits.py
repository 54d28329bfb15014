"""The random samplers' bits on a GPU: ``functx.jit`` (Triton) against functx's eager path and JAX.

Run from the repository root on a CUDA machine (JAX with CUDA installed beside functx):

    python benchmarks/gpu_bits.py           # both fp-fusion settings, one child process each
    python benchmarks/gpu_bits.py --child   # one run with the current environment
    python benchmarks/gpu_bits.py --child --cpu   # a smoke test of the script: C++ jit, no GPU

For each sampler (float32 and float64) it prints the largest distance in ulp, and how many of
2^16 samples differ, between functx's jitted GPU samples and

* functx's eager samples (NumPy on the host: the bits of ``jax.jit`` on the CPU),
* ``jax.jit`` on the CPU (the reference functx reproduces),
* ``jax.jit`` on the GPU (XLA's GPU math: libdevice, so not the CPU's bits).

Two diagnostics say where a GPU difference can come from: a float32 division (Triton's ``/`` is
``div.full.f32``, up to 2 ulp from IEEE's ``div.rn``; ``functx._xlamath`` divides through float64)
and ``a * b + c`` (Triton compiles with fp fusion on unless ``TRITON_DEFAULT_FP_FUSION=0``: the
product is then contracted into a fused multiply-add, which the emulated math must not see).
Without arguments the script runs itself twice, with ``TRITON_DEFAULT_FP_FUSION`` 1 (Triton's
default) and 0, so the two settings' ulp and times can be compared; each child uses a fresh
functx cache directory. Last, ``random.normal`` of 2^24 float32 values is timed against JAX's
(median of 5 loops ended by one synchronisation).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

N = 1 << (12 if "--cpu" in sys.argv else 16)
SAMPLERS = (
    "normal",
    "exponential",
    "gumbel",
    "laplace",
    "logistic",
    "cauchy",
    "truncated_normal",
    "gamma",
    "beta",
    "lognormal",
)


def say(*a):
    print(*a, flush=True)


def ordered(a):
    """Floats as integers in the order of their values (ulp distance is a difference)."""
    import numpy as np

    a = np.ascontiguousarray(a)
    it = np.int32 if a.dtype == np.float32 else np.int64
    i = a.view(it).astype(np.int64)
    return np.where(i < 0, np.iinfo(it).min - i, i)


def ulp_report(got, want):
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} vs {want.shape} {want.dtype}"
    both_nan = np.isnan(got) & np.isnan(want)
    d = np.where(both_nan, 0, np.abs(ordered(got) - ordered(want)))
    return f"max {int(d.max()):>6} ulp, {int((d != 0).sum()):>6} differ"


def call(name, r, key, dt, p):
    """One sampler of module ``r`` (functx.random or jax.random), N samples of dtype ``dt``.
    (Parameters ``p`` are arguments of the jitted programs: XLA folds constants with other
    roundings.)"""
    shape = (N,)
    if name == "truncated_normal":
        return r.truncated_normal(key, -1.5, 2.0, shape, dt)
    if name == "gamma":
        return r.gamma(key, p[0], shape, dt)
    if name == "beta":
        return r.beta(key, p[1], p[2], shape, dt)
    if name == "lognormal":
        return r.lognormal(key, p[1], shape, dt)
    return getattr(r, name)(key, shape, dt)


def child():
    import jax
    import numpy as np
    import torch

    import functx
    import functx.random as fr

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    on_cpu = "--cpu" in sys.argv
    gpu_dev = None if on_cpu else functx.devices("gpu")[0]

    def gpu(x):
        return x if on_cpu else functx.device_put(x, gpu_dev)

    def host(x):
        if on_cpu or isinstance(x, np.ndarray):
            return np.asarray(x)
        return np.asarray(torch.from_dlpack(x).cpu())

    def sync_fx(out):
        if not on_cpu:
            torch.cuda.synchronize()

    fusion = os.environ.get("TRITON_DEFAULT_FP_FUSION", "(unset: Triton's default, on)")
    say(f"== TRITON_DEFAULT_FP_FUSION={fusion}")
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    q = host(functx.jit(lambda x, y: x / y)(gpu(a), gpu(b)))
    say(f"diagnostic float32 a / b        vs IEEE: {ulp_report(q, a / b)}")
    m = host(functx.jit(lambda x, y, z: x * y + z)(gpu(a), gpu(b), gpu(c)))
    say(f"diagnostic float32 a * b + c    vs unfused: {ulp_report(m, a * b + c)}")

    key = np.asarray(jax.random.PRNGKey(7))
    cpu_key = jax.device_put(key, jax.devices("cpu")[0])
    gpu_key = cpu_key if on_cpu else jax.device_put(key, jax.devices("gpu")[0])
    for dt in (np.float32, np.float64):
        p = np.array([2.5, 0.7, 2.0], dt)
        for name in SAMPLERS:
            try:
                ff = functx.jit(lambda k, q, n=name, d=dt: call(n, fr, k, d, q))
                got = host(ff(gpu(key), gpu(p)))
                eager = np.asarray(call(name, fr, key, dt, p))
                jf = jax.jit(lambda k, q, n=name, d=dt: call(n, jax.random, k, d, q))
                j_cpu = np.asarray(jf(cpu_key, jax.device_put(p, cpu_key.device)))
                j_gpu = np.asarray(jf(gpu_key, jax.device_put(p, gpu_key.device)))
                say(
                    f"{np.dtype(dt).name:8} {name:17} vs eager: {ulp_report(got, eager)} | "
                    f"vs JAX CPU: {ulp_report(got, j_cpu)} | vs JAX GPU: {ulp_report(got, j_gpu)}"
                    f" | eager vs JAX CPU: {ulp_report(eager, j_cpu)}"
                )
            except Exception as e:  # report every sampler, even after a failure
                say(f"{np.dtype(dt).name:8} {name:17} FAILED {type(e).__name__}: {str(e)[:300]}")

    def timeit(fn, sync, reps=5, warmup=3, target_s=0.2):
        for _ in range(warmup):
            sync(fn())
        t0 = time.perf_counter()
        sync(fn())
        one = max(time.perf_counter() - t0, 1e-6)
        n = max(1, int(target_s / one))
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(n):
                out = fn()
            sync(out)
            times.append((time.perf_counter() - t0) / n)
        return statistics.median(times)

    big = 1 << (20 if on_cpu else 24)
    fnorm = functx.jit(lambda k: fr.normal(k, (big,), np.float32))
    jnorm = jax.jit(lambda k: jax.random.normal(k, (big,), np.float32))
    fk = gpu(key)
    t_fx = timeit(lambda: fnorm(fk), sync_fx)
    t_jax = timeit(lambda: jnorm(gpu_key), jax.block_until_ready)
    say(
        f"timing normal 2^{big.bit_length() - 1} float32: functx {t_fx * 1e3:.3f} ms, "
        f"JAX {t_jax * 1e3:.3f} ms, ratio {t_fx / t_jax:.2f}"
    )


def main():
    if "--child" in sys.argv:
        child()
        return
    for fusion in ("1", "0"):
        env = dict(os.environ, TRITON_DEFAULT_FP_FUSION=fusion)
        env["FUNCTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="fx_gpu_bits_")
        subprocess.run([sys.executable, __file__, "--child"], env=env, check=False)


if __name__ == "__main__":
    main()
