"""float32 ``rsqrt`` and ``random.gamma`` bits: functx against JAX on this host's CPU.

XLA's CPU float32 ``rsqrt`` is the processor's ``rsqrtss`` refined by Newton steps (one on AMD,
two on Intel; ``1 / sqrt(x)`` without AVX), and ``random.gamma`` uses it (see
``functx/lowering/cpp/hostmath.py``). This script checks, on whatever x86-64 host it runs:

1. the host (vendor, AVX, SSE4a, AVX-512F) and the Newton steps functx's helper chose;
2. functx's eager and jitted (C++) float32 ``rsqrt`` against ``jax.jit(jax.lax.rsqrt)`` on about
   10^6 inputs (random bit patterns, subnormals, zeros, infinities, NaN, powers of 2, every
   mantissa of [1, 4)), and float16/bfloat16/float64 for information;
3. if anything differs: the same inputs through other candidate sequences (0, 1 or 2 Newton
   steps, AVX-512's ``rsqrt14ss``), so one run says which one XLA uses here, and the
   instructions in XLA's own object code for ``rsqrt`` (from ``--xla_dump_to``);
4. float32 ``random.gamma`` bits, eager and jitted, against ``jax.random.gamma`` for ~50 shapes
   (``1e-4`` to ``1e6``; JAX compiles its sampler once, the shapes being its argument).

Run on a GPU machine's CPU with ``CUDA_VISIBLE_DEVICES= JAX_PLATFORMS=cpu PYTHONPATH=. python
benchmarks/rsqrt_check.py`` (``--quick``: 2**18 rsqrt inputs and 12 gamma shapes). It prints a
table of counts and ``ALL EQUAL`` or ``DIFFERENCES`` on its last line.

On the development machine (AMD EPYC, AVX2, SSE4a, no AVX-512; 2026-11-26, load ~9): one Newton
step; float32 rsqrt eager and jit equal on 17,827,504 of 17,827,504 inputs (10^6 random patterns
and every mantissa of [1, 4) among them), float16/bfloat16 on all 65,536, float64 on 100,000;
XLA's code there: 80 ``vrsqrtss`` and 160 ``vfmadd213ss``; gamma 50 of 50 shapes equal, eager
and jit; 65 s.

On the GPU host's CPU (Intel Xeon with AVX-512, JAX 0.11.2; 2026-11-26, at abab2a2): two Newton
steps; float32 rsqrt equal on all 17,827,504 inputs eagerly and under jit, float16/bfloat16 on
all; float64 71,058 of 100,000 (XLA: ``vrsqrt14pd`` and two steps, which functx then lacked);
gamma under jit 50 of 50, eager 37 of 50 (NumPy's AVX-512 ``power`` in the boost of shapes below
1). Both fixed after that run (functx/lowering/cpp/hostmath.py).
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_DUMP = tempfile.mkdtemp(prefix="rsqrt_xla_dump_")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={_DUMP}").strip()

import jax  # noqa: E402
import jax.random as jr  # noqa: E402
import ml_dtypes  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.random as fr  # noqa: E402
from functx.lowering import cache  # noqa: E402
from functx.lowering.cpp import hostmath  # noqa: E402

jax.config.update("jax_enable_x64", True)
functx.config.update("jax_enable_x64", True)


def host():
    info = {"machine": platform.machine(), "vendor": "?", "model": "?", "flags": set()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "vendor_id":
                    info["vendor"] = v
                elif k == "model name":
                    info["model"] = v
                elif k == "flags":
                    info["flags"] = set(v.split())
                    break
    except OSError:
        pass
    return info


def inputs(n_random, rng):
    """float32 test inputs: random bit patterns, subnormals, specials, powers of 2, and the
    mantissas of [1, 4) (a stride of them under --quick)."""
    stride = 1 if n_random >= 10**6 else 32
    mant = np.arange(0, 2**23, stride, dtype=np.uint32)
    return np.concatenate(
        [
            rng.integers(0, 2**32, n_random, dtype=np.uint64).astype(np.uint32).view(np.float32),
            rng.integers(1, 2**23, n_random // 20, dtype=np.uint32).view(np.float32),
            np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, -1, 1, 2, 4, 0.25], np.float32),
            np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32),
            (0x3F800000 + mant).view(np.float32),
            (0x40000000 + mant).view(np.float32),
        ]
    )


def n_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    ia = a.view(np.uint8).reshape(a.size, -1)
    ib = b.view(np.uint8).reshape(b.size, -1)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return int(((ia == ib).all(axis=1) | nan).sum())


_VARIANT = r"""
#include <stdint.h>
typedef float v4sf __attribute__((vector_size(16)));
extern "C" void run(const float* x, float* y, int64_t n, int steps, int use14) {
  for (int64_t i = 0; i < n; ++i) {
    float xi = x[i];
    if (steps < 0) { y[i] = 1.0f / __builtin_sqrtf(xi); continue; }
    v4sf v = {xi, 0.0f, 0.0f, 0.0f};
    float g;
#ifdef __AVX512F__
    if (use14) g = __builtin_ia32_rsqrt14ss(v, v)[0]; else
#endif
    g = __builtin_ia32_rsqrtss(v)[0];
    if (!(xi < __FLT_MIN__ || xi == __builtin_huge_valf()))
      for (int s = 0; s < steps; ++s) {
        float r2 = xi * g, half = g * -0.5f;
        g = __builtin_fmaf(half, __builtin_fmaf(r2, g, -1.0f), g);
      }
    y[i] = g;
  }
}
"""


def candidates(x, want, avx512):
    """Match counts of candidate float32 sequences (to name XLA's where functx's differs)."""
    import ctypes

    so, _ = cache.compile_cached(_VARIANT, suffix="-rsqrt-variants")
    lib = ctypes.CDLL(so)
    lib.run.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int,
        ctypes.c_int,
    ]
    rows = []
    for name, steps, use14 in [
        ("1 / sqrt(x)", -1, 0),
        ("rsqrtss, no step", 0, 0),
        ("rsqrtss + 1 step", 1, 0),
        ("rsqrtss + 2 steps", 2, 0),
        *([("rsqrt14ss + 1 step", 1, 1), ("rsqrt14ss + 2 steps", 2, 1)] if avx512 else []),
    ]:
        y = np.empty_like(x)
        lib.run(x.ctypes.data, y.ctypes.data, x.size, steps, use14)
        rows.append((name, n_equal(y, want)))
    return rows


def xla_instructions():
    """x86 mnemonics mentioning rsqrt/fma/sqrt/div in XLA's object code for jit(rsqrt)."""
    out = {}
    for o in glob.glob(os.path.join(_DUMP, "*rsqrt*.o")):
        try:
            text = subprocess.run(
                ["objdump", "-d", "--no-show-raw-insn", o], capture_output=True, text=True
            ).stdout
        except OSError:
            return {"objdump": "missing"}
        for line in text.splitlines():
            parts = line.split("\t")
            if len(parts) >= 2:
                m = parts[1].split()[0] if parts[1].split() else ""
                if any(s in m for s in ("rsqrt", "fmadd", "fnmadd", "sqrt", "div")):
                    out[m] = out.get(m, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2**18 rsqrt inputs, 12 gamma shapes")
    args = ap.parse_args()
    t0 = time.time()
    rng = np.random.default_rng(0)
    h = host()
    avx512 = "avx512f" in h["flags"]
    print(f"host: {h['machine']} {h['vendor']} {h['model']}")
    print(
        "  avx:",
        "avx" in h["flags"],
        " sse4a:",
        "sse4a" in h["flags"],
        " avx512f:",
        avx512,
        f" -> functx's rsqrt Newton steps (0: 1/sqrt): float32 {hostmath.rsqrt_steps()},"
        f" float64 {hostmath.rsqrt_steps(np.float64)}",
    )
    print(f"  jax {jax.__version__}, functx devices {functx.devices()}")

    # --- rsqrt ---------------------------------------------------------------------------------
    x = inputs(2**18 if args.quick else 10**6, rng)
    halves = {
        "float16": np.arange(2**16, dtype=np.uint16).view(np.float16),
        "bfloat16": np.arange(2**16, dtype=np.uint16).view(ml_dtypes.bfloat16),
        "float64": np.exp(rng.uniform(-700, 700, 10**5)),
    }
    data = {"float32": x, **halves}
    want = jax.jit(lambda d: {k: jax.lax.rsqrt(v) for k, v in d.items()})(data)
    want = {k: np.asarray(v) for k, v in want.items()}
    with np.errstate(all="ignore"):
        eager = {k: np.asarray(flax.rsqrt(v)) for k, v in data.items()}
        compiled = functx.jit(lambda d: {k: flax.rsqrt(v) for k, v in d.items()})(data)
        compiled = {k: np.asarray(v) for k, v in compiled.items()}
    print("\nrsqrt against jax.jit(lax.rsqrt): equal bits (NaN = NaN)")
    print(f"  {'dtype':10s} {'inputs':>9s} {'eager':>9s} {'jit (C++)':>9s}")
    ok = True
    for k in data:
        n, e, c = data[k].size, n_equal(eager[k], want[k]), n_equal(compiled[k], want[k])
        ok &= e == n and c == n
        print(f"  {k:10s} {n:9d} {e:9d} {c:9d}")
    if n_equal(eager["float32"], want["float32"]) != x.size:
        print("\n  candidates for XLA's float32 sequence (equal bits of", x.size, "):")
        try:
            for name, n in candidates(x, want["float32"], avx512):
                print(f"    {name:22s} {n:9d}")
        except Exception as e:  # noqa: BLE001 - a diagnostic only: report and go on
            print(f"    (the candidates did not run: {type(e).__name__}: {e})")
        bad = np.flatnonzero(eager["float32"].view(np.uint32) != want["float32"].view(np.uint32))
        print("  first differences (x, jax, functx):")
        for i in bad[:6]:
            print(f"    {x[i]!r} {want['float32'][i]!r} {eager['float32'][i]!r}")
    print("  XLA's object code for jit(rsqrt):", xla_instructions())

    # --- pow (libm's per element, as XLA calls it) ----------------------------------------------
    print("\npow against jax.jit(lax.pow): equal bits")
    for dt in (np.float32, np.float64):
        b = rng.uniform(0, 4, 200000).astype(dt)
        e = np.concatenate([rng.uniform(-3, 3, 199998), [0.5, 2.0]]).astype(dt)
        want_p = np.asarray(jax.jit(jax.lax.pow)(b, e))
        eager_p = np.asarray(flax.pow(b, e))
        comp_p = np.asarray(functx.jit(flax.pow)(b, e))
        ne, nc = n_equal(eager_p, want_p), n_equal(comp_p, want_p)
        ok &= ne == b.size
        print(f"  {np.dtype(dt).name:10s} {b.size:9d} eager {ne:9d} jit (C++) {nc:9d}")

    # --- gamma ---------------------------------------------------------------------------------
    n_shapes = 12 if args.quick else 50
    a = np.exp(np.linspace(np.log(1e-4), np.log(1e6), n_shapes - 6))
    a = np.concatenate([a, [0.25, 1.93, 13.9, 14.2, 14.8, 2 / 3]])
    key = np.asarray(jr.PRNGKey(7))
    n_samples = 20
    for dt in (np.float32, np.float64):
        ad = a.astype(dt)
        jg = jax.jit(lambda k, al, dt=dt: jr.gamma(k, al, (n_samples, al.shape[0]), dt))
        want_g = np.asarray(jg(key, ad))
        got_e = np.asarray(fr.gamma(key, ad, (n_samples, a.size), dt))
        got_c = np.asarray(
            functx.jit(lambda k, al, dt=dt: fr.gamma(k, al, (n_samples, a.size), dt))(key, ad)
        )
        eq_e = (got_e == want_g).all(axis=0)
        eq_c = (got_c == want_g).all(axis=0)
        ok &= bool(eq_e.all() and (eq_c.all() or dt == np.float64))
        name = np.dtype(dt).name
        print(f"\n{name} gamma against jax.random.gamma ({n_samples} samples per shape)")
        print(
            f"  shapes {a.size}: eager equal {int(eq_e.sum())}, jit (C++) equal {int(eq_c.sum())}"
        )
        for i in np.flatnonzero(~(eq_e & eq_c))[:10]:
            print(
                f"    a={ad[i]!r}: eager {int((got_e[:, i] != want_g[:, i]).sum())} "
                f"jit {int((got_c[:, i] != want_g[:, i]).sum())} samples differ"
            )
    print(f"\n{time.time() - t0:.0f} s; {'ALL EQUAL' if ok else 'DIFFERENCES'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
