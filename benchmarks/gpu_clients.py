"""The client programs of issue 19's kinds (``tests/clients/programs/``) on a GPU, in one process.

Run from the repository root on a CUDA machine:

    python benchmarks/gpu_clients.py                 # every program of the list
    python benchmarks/gpu_clients.py small_cnn ...   # some of them
    python benchmarks/gpu_clients.py --diagnose      # single operations, GPU against CPU

Each program runs as written (imports swapped, as ``tests/clients/test_clients.py`` does) with
functx's default device the GPU, so its eager operations and its jitted steps both run there
(Triton kernels and library calls), in full float32 (``FUNCTX_DEFAULT_MATMUL_PRECISION=highest``:
the reference is JAX on the CPU, whose products are full float32). Checks first: the same tree,
dtypes and values as JAX's run (to the program's ``GPU_RTOL`` where it has one: the GPU's exp
and tanh differ from XLA's CPU ones in the last bits), every result on the GPU. Then the time of
the whole program (first run: compiles included; second run: warm caches), which says where the
eager GPU path costs, not a comparison with JAX.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

os.environ["FUNCTX_DEFAULT_DEVICE"] = "gpu"
os.environ["FUNCTX_DEFAULT_MATMUL_PRECISION"] = "highest"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "clients"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import test_clients as tc  # noqa: E402

import functx  # noqa: E402

PROGRAMS = (
    "newton_logreg_solve_x64 gp_marginal_likelihood small_cnn mamba_conv_block fft_long_conv "
    "sort_topk_losses gnn_segment_sum implicit_diff_x64 eigh_spectral_x64 scan_training_random"
).split()


def check(name: str) -> bool:
    path = tc.PROGRAMS / f"{name}.py"
    with tc._FreshConfig():
        theirs, module = tc.run_program(path, with_functx=False)
        theirs = jax.tree_util.tree_map(np.asarray, theirs)
    times, ok = [], True
    for run in ("first", "second"):  # (the second reuses compiled kernels, CUDA graphs replay)
        with tc._FreshConfig():
            t0 = time.perf_counter()
            ours, _ = tc.run_program(path, with_functx=True)
            functx.block_until_ready(ours)
            times.append(time.perf_counter() - t0)
            ours = functx.tree_util.tree_map(lambda a: (str(a.device), np.asarray(a)), ours)
        places = {d for d, _ in functx.tree_util.tree_leaves(ours, is_leaf=_pair)}
        ours = functx.tree_util.tree_map(lambda p: p[1], ours, is_leaf=_pair)
        try:
            rtol = getattr(module, "GPU_RTOL", getattr(module, "RTOL", 1e-5))
            tc.compare(ours, theirs, rtol, getattr(module, "ATOL", 1e-6))
            good = places == {str(functx.devices("gpu")[0])}
            print(f"{name}, {run} run: {'ok' if good else 'FAIL'} (results on {sorted(places)})")
        except AssertionError as e:
            good = False
            print(f"{name}, {run} run: FAIL {str(e)[:300]}")
        ok = ok and good
    print(f"{name}: first run {times[0]:.2f} s, second {times[1]:.3f} s")
    return ok


def _pair(x):
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)


def diagnose() -> int:
    """Single operations on the GPU against the same on the CPU (functx's eager path), eager and
    under jit, arrays made on the GPU (the default device) and put there: which step goes wrong
    when a program does."""
    import functx.numpy as fnp

    gpu, cpu = functx.devices("gpu")[0], functx.devices("cpu")[0]
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(8).astype(np.float32)
    m_np = rng.standard_normal((4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    steps = {
        "put, x * 2 + 1": lambda d: functx.device_put(x_np, d) * 2.0 + 1.0,
        "arange (default device)": lambda d: fnp.arange(8.0) + 0.0,
        "zeros + put": lambda d: fnp.zeros(8) + functx.device_put(x_np, d),
        "asarray of a list": lambda d: fnp.asarray([1.0, 2.0, 3.0]) * 2.0,
        "PRNGKey data": lambda d: functx.random.key_data(functx.random.PRNGKey(0)),
        "random.normal": lambda d: functx.random.normal(functx.random.PRNGKey(0), (6,)),
        "random.split": lambda d: functx.random.split(functx.random.PRNGKey(3), 3),
        "sum": lambda d: fnp.sum(functx.device_put(x_np, d)),
        "matmul": lambda d: functx.device_put(m_np, d) @ functx.device_put(m_np, d),
        "rfft": lambda d: fnp.abs(fnp.fft.rfft(functx.device_put(x_np, d))),
        "solve": lambda d: fnp.linalg.solve(
            functx.device_put(m_np, d), functx.device_put(x_np[:4], d)
        ),
        "jit x * 2 + 1": lambda d: functx.jit(lambda v: v * 2.0 + 1.0)(functx.device_put(x_np, d)),
        "jit sum of sin": lambda d: functx.jit(lambda v: fnp.sum(fnp.sin(v)))(
            functx.device_put(x_np, d)
        ),
        "grad": lambda d: functx.grad(lambda v: fnp.sum(v**3))(functx.device_put(x_np, d)),
    }
    bad = 0
    for name, f in steps.items():
        try:
            with functx.default_device(cpu):
                want = np.asarray(f(cpu))
            got = [f(gpu) for _ in range(3)][-1]  # (a jitted step's third call: graph replay)
            where_ = str(got.device)
            got = np.asarray(got)
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
            print(f"{name}: {'ok' if ok else 'FAIL'} on {where_}", "" if ok else f"{got} != {want}")
        except Exception as e:  # noqa: BLE001 - report every step
            ok = False
            print(f"{name}: ERROR {type(e).__name__}: {str(e)[:300]}")
        bad += not ok
    return 1 if bad else 0


def main(names):
    print("GPU:", functx.devices("gpu")[0], "| JAX", jax.__version__, jax.devices()[0].platform)
    bad = []
    for name in names:
        try:
            if not check(name):
                bad.append(name)
        except Exception:  # noqa: BLE001 - report every program, then fail
            traceback.print_exc(limit=-4)
            bad.append(name)
    print("failed:", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--diagnose"]:
        sys.exit(diagnose())
    sys.exit(main(sys.argv[1:] or PROGRAMS))
