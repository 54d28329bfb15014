"""Where the per-sample-gradient step's time goes on a GPU (issue 7's one target at parity).

Run from the repository root on a CUDA machine:

    python benchmarks/gpu_per_sample.py             # rounds and profiles of the step
    python benchmarks/gpu_per_sample.py products    # also: TF32 products, cuBLAS against tl.dot

The step is ``benchmarks/gpu.py``'s: ``jit(vmap(grad(loss)))`` of a 784-1024-1024-10 tanh MLP
on 1024 samples, float32, each library's default (TF32) products. Both libraries write the same
7.6 GB of per-sample weight gradients, so the step is bound by writes; what separates them is
the rest (small kernels, and the GPU's idle time between launches).

* Rounds: functx (``functx.jit``, which replays in-place CUDA graphs for this program), functx
  with its graphs off (kernel by kernel), and ``jax.jit``, alternating in one process; each
  figure ``gpu.py``'s ``timeit``: the median of 5 loops of about 40 calls.
* Profiles (torch's profiler, which sees JAX's kernels too): one step of each, kernel by kernel,
  with the gap before each kernel, and the spans of whole steps.
* ``products``: the three 1024-size products of the step, ``torch.matmul`` (cuBLAS) against a
  plain Triton ``tl.dot`` kernel in TF32 over a few tile shapes (an experiment not kept: cuBLAS
  was faster).
"""

from __future__ import annotations

import functools
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _mm(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
):
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    width = GROUP * npn
    first = (pid // width) * GROUP
    rows = min(npm - first, GROUP)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        x = tl.load(a, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision="tf32")
        a += BK * sak
        b += BK * sbk
    tl.store(
        c_ptr + rm[:, None] * scm + rn[None, :] * scn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def products():
    from triton.testing import do_bench

    print("=== TF32 products of the step: torch.matmul (cuBLAS) against Triton tl.dot", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    g = torch.Generator(device="cuda").manual_seed(0)
    tiles = [
        (64, 128, 32, 4, 3),
        (64, 128, 32, 4, 4),
        (128, 128, 32, 8, 3),
        (64, 64, 32, 4, 4),
        (64, 64, 64, 4, 3),
        (128, 64, 32, 4, 3),
        (64, 128, 64, 4, 3),
        (128, 128, 64, 8, 3),
        (64, 256, 32, 8, 3),
        (128, 256, 32, 8, 3),
        (32, 64, 64, 4, 4),
    ]
    for name, sa, sb, transposed in [
        ("x @ w1", (1024, 784), (784, 1024), False),
        ("h1 @ w2", (1024, 1024), (1024, 1024), False),
        ("d2 @ w2.T", (1024, 1024), (1024, 1024), True),
    ]:
        a = torch.randn(*sa, device="cuda", generator=g)
        b = torch.randn(*(sb[::-1] if transposed else sb), device="cuda", generator=g)
        b = b.T if transposed else b
        c = torch.empty(sa[0], sb[1], device="cuda")
        ref = (a.double() @ b.double()).float()

        def err():
            return float((c - ref).norm() / ref.norm())

        t_cublas = do_bench(lambda: torch.matmul(a, b, out=c), warmup=50, rep=300)
        print(f"{name}: cuBLAS {t_cublas * 1e3:.1f} us (error {err():.1e})", flush=True)
        best = None
        for bm, bn, bk, warps, stages in tiles:

            def run(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages):
                _mm[(triton.cdiv(a.shape[0], bm) * triton.cdiv(b.shape[1], bn),)](
                    a,
                    b,
                    c,
                    a.shape[0],
                    b.shape[1],
                    a.shape[1],
                    a.stride(0),
                    a.stride(1),
                    b.stride(0),
                    b.stride(1),
                    c.stride(0),
                    c.stride(1),
                    BM=bm,
                    BN=bn,
                    BK=bk,
                    GROUP=8,
                    num_warps=warps,
                    num_stages=stages,
                )

            run()
            t = do_bench(run, warmup=50, rep=300)
            print(
                f"   tl.dot tile {bm}x{bn}x{bk}, {warps} warps, {stages} stages: "
                f"{t * 1e3:.1f} us (error {err():.1e})",
                flush=True,
            )
            best = t if best is None else min(best, t)
        print(
            f"   fastest tl.dot {best * 1e3:.1f} us against cuBLAS {t_cublas * 1e3:.1f}", flush=True
        )


def per_sample():
    import jax
    import jax.numpy as jnp
    from gpu import timeit  # (beside this file)
    from torch.profiler import ProfilerActivity, profile

    import functx
    import functx.nn as fnn
    import functx.numpy as fnp
    from functx.lowering.triton import runtime as rt

    print("=== per-sample gradients, MLP 784-1024-1024-10, batch 1024", flush=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    n_in, n_hid, batch = 784, 1024, 1024

    def randn(*s):
        return torch.randn(*s, device="cuda", generator=g)

    p = {
        "w1": randn(n_in, n_hid) * n_in**-0.5,
        "b1": randn(n_hid) * 0.1,
        "w2": randn(n_hid, n_hid) * n_hid**-0.5,
        "b2": randn(n_hid) * 0.1,
        "w3": randn(n_hid, 10) * n_hid**-0.5,
        "b3": randn(10) * 0.1,
    }
    x = randn(batch, n_in)
    y = torch.nn.functional.one_hot(
        torch.randint(0, 10, (batch,), device="cuda", generator=g), 10
    ).float()

    def loss(np_, nn, p, x, y):
        h = np_.tanh(x @ p["w1"] + p["b1"])
        h = np_.tanh(h @ p["w2"] + p["b2"])
        return -np_.sum(y * nn.log_softmax(h @ p["w3"] + p["b3"]))

    fx = functx.jit(
        functx.vmap(functx.grad(functools.partial(loss, fnp, fnn)), in_axes=(None, 0, 0))
    )
    jf = jax.jit(jax.vmap(jax.grad(functools.partial(loss, jnp, jax.nn)), in_axes=(None, 0, 0)))
    gpu = functx.devices("gpu")[0]
    fargs = functx.tree_util.tree_map(lambda t: functx.device_put(t, gpu), (p, x, y))
    jargs = jax.tree_util.tree_map(jax.dlpack.from_dlpack, (p, x, y))

    def leaves(out):
        return [torch.from_dlpack(t) for t in jax.tree_util.tree_leaves(out)]

    # correctness: direct launches, graph replays (results held) and JAX agree
    direct = [t.clone() for t in leaves(fx(*fargs))]
    held = [fx(*fargs) for _ in range(4)]  # the 3rd and 4th calls capture in-place graphs
    (exe,) = [entry[0] for entry in fx.cache.values()]
    while hasattr(exe, "exe"):
        exe = exe.exe
    want = leaves(jf(*jargs))
    torch.cuda.synchronize()

    def rel_err(got, want):
        return max(
            float((a.double() - b.double()).norm() / b.double().norm()) for a, b in zip(got, want)
        )

    # (cuBLAS may pick another kernel under capture: not bit for bit, though it was on the H100)
    replay_err = max(rel_err(leaves(out), direct) for out in held)
    assert replay_err <= 1e-6, replay_err
    (state,) = exe._graphs.values()
    assert isinstance(state, rt.InPlaceGraphs) and state.instances(), exe.graph_note
    print(
        f"{state.instances()} in-place graphs replayed the direct launches' results (error "
        f"{replay_err:.1e}); functx against JAX (both TF32): {rel_err(direct, want):.1e}",
        flush=True,
    )
    del held, direct, want

    def sync_fx(_):
        torch.cuda.synchronize()

    def graphs_off():
        on, exe.use_graphs = exe.use_graphs, False
        try:
            return fx(*fargs)
        finally:
            exe.use_graphs = on

    steps = {
        "functx": (lambda: fx(*fargs), sync_fx),
        "functx, graphs off": (graphs_off, sync_fx),
        "jax": (lambda: jf(*jargs), jax.block_until_ready),
    }
    for r in range(3):
        t = {k: timeit(fn, sync, target_s=0.1) for k, (fn, sync) in steps.items()}
        print(
            f"round {r}: "
            + "  ".join(f"{k} {v * 1e3:.3f} ms" for k, v in t.items())
            + f"  (jax / functx {t['jax'] / t['functx']:.3f}, graphs off "
            f"{t['jax'] / t['functx, graphs off']:.3f})",
            flush=True,
        )
    for name, (fn, sync) in steps.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                out = fn()
            sync(out)
        evs = sorted(
            (e for e in prof.events() if e.device_type.name == "CUDA"),
            key=lambda e: e.time_range.start,
        )
        n = len(evs) // 3
        spans = [evs[(i + 1) * n].time_range.start - evs[i * n].time_range.start for i in range(2)]
        print(
            f"--- {name}: {n} kernels a step; step spans "
            + ", ".join(f"{s:.1f}" for s in spans)
            + " us",
            flush=True,
        )
        prev = None
        for e in evs[n : 2 * n]:
            gap = e.time_range.start - prev if prev is not None else 0.0
            prev = e.time_range.end
            print(f"  {e.time_range.elapsed_us():8.1f} us  gap {gap:5.1f}  {e.name[:70]}")


if __name__ == "__main__":
    if "products" in sys.argv[1:]:
        products()
    per_sample()
