"""Data-parallel scaling (issue 22): the DP-SGD step and the GPT block step of ``examples/`` at
1, 2 and 4 GPUs, weak scaling (the same batch per GPU), for functx (``shard_map`` over one process
per GPU, NCCL through ``torch.distributed``), JAX (``jax.jit`` of the ``jax.shard_map``-ped step
over the GPUs of one process) and PyTorch (``DistributedDataParallel`` for the GPT block;
per-sample gradients with ``torch.func`` and one ``all_reduce`` of the clipped sum for DP-SGD).

Run from the repository root on a machine with 4 GPUs: one command gives the whole table within
``--deadline`` seconds (450 by default)::

    python benchmarks/multi_gpu.py

On a CPU (gloo between processes, JAX over ``--xla_force_host_platform_device_count`` host
devices, small sizes), to check the script itself::

    python benchmarks/multi_gpu.py --platform cpu --size quick --gpus 1,2

One launch per library and GPU count n (functx: ``python -m functx.distributed --nproc n``;
torch: ``torch.distributed.run``; JAX: one process that sees n GPUs), which runs every workload
and batch size; the launches go n = 1, then the largest n, then the others, each library in
turn, each under a time limit (``--timeout``) cut to what is left of ``--deadline``. Results
are printed as they come (and appended to ``$OUT/multi_gpu.jsonl`` when ``OUT`` is set), so a
launch that runs out of time leaves the rows it finished; the table follows at the end.

In each launch and for each configuration the n-GPU step is first checked against the library's
own single-device step on the whole (global) batch, then timed: a warm-up of at least
``--warmup`` seconds (compilation, autotuning, NCCL's and DDP's first-call work are over before
it ends), then the median of 5 loops of at least 0.2 s each, each loop ended by a
synchronisation; "spread" is (slowest - fastest loop) / median. Over processes every rank runs
the same number of steps (the counts are agreed with an ``all_reduce``), and rank 0's times are
reported. The check prints the largest |difference| of the new parameters over the largest
|update| (new - old) of the reference: float rounding (TF32 products on a GPU, sums in another
order) gives about 1e-3 or less; a wrong step gives about 1.

Efficiency is weak-scaling efficiency, t1 / tn with t the time per step (each GPU's work is the
same at every n), t1 the library's plain single-device step (jitted, no ``shard_map``; torch:
no DDP): the throughput at n GPUs over n times the throughput at one. (Per processed sample,
t = step time / global batch, that is the issue's t1 / (n * tn).)

The batch sizes: DP-SGD at 32768 examples per GPU, the GPT block at 64 sequences of 256 tokens
per GPU (``--dpsgd-per-gpu 4096,16384`` and ``--gpt-per-gpu 16,64`` run others, each size a
row). DP-SGD trains with batches of thousands to millions of examples, and its step can overlap
little of its reduction (the clipped sum needs every example's norm): at 4 GPUs a step costs
~0.09 ms more than on one GPU, plus a copy of the device's block of the inputs (~2 ns per
example), against ~0.04-0.09 us per example of computing, so 90% needs tens of thousands of
examples per GPU (RESULTS.md, 2026-11-26 14:11, and this script's later runs). The peers
compute DP-SGD's per-example gradients (``vmap(grad)``) in blocks of ``PEER_CHUNK`` examples
(a whole batch of them would need batch x 7.4 MB); functx's ``jit`` computes the norms and the
clipped sum from the layers' factors and takes the whole batch at once. Float32 products use
TF32 in every library (JAX's and functx's default; torch is set to it).

functx extras: at the largest n the reduction alone (one ``torch.distributed.all_reduce`` of the
flat gradients, and functx's jitted ``psum`` of them); on a GPU the device time of a call (CUDA
events) and the host's time to issue it; ``--overlap off,2M`` times the step at the largest n
with the psum not overlapped with the backward pass and with other bucket sizes
(``--overlap-workloads``: DP-SGD's); ``--profile`` writes the step's kernel table at 1 and at the
largest n into ``multi_gpu.log`` (beside ``multi_gpu.jsonl``, with every worker's output).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import numpy as np  # noqa: E402

SIZES = {
    # dpsgd: MLP sizes, batch per GPU; gpt: vocab, d, heads, T, batch (sequences) per GPU
    "full": {"dpsgd": ((784, 1024, 1024, 10), 32768), "gpt": (4096, 512, 8, 256, 64)},
    "quick": {"dpsgd": ((32, 64, 10), 64), "gpt": (64, 32, 4, 16, 4)},
}
# the peers' DP-SGD: per-example gradients of this many examples at a time (7.6 GB at "full")
PEER_CHUNK = {"full": 1024, "quick": 16}
LR, CLIP, SIGMA = 0.1, 1.0, 0.5


# --- workloads (NumPy data, the same in every process) --------------------------------------------
def config(size, workload, per=None):
    """The workload's sizes (``SIZES``), the batch per GPU replaced by ``per`` when given."""
    c = SIZES[size][workload]
    if per is None:
        return c
    return (c[0], per) if workload == "dpsgd" else (*c[:4], per)


def dpsgd_data(size, n, per=None):
    import dp_sgd_data_parallel as ex

    sizes, b = config(size, "dpsgd", per)
    rng = np.random.default_rng(0)
    params = ex.init_params(rng, sizes)
    x, y = ex.make_batch(rng, b * n, sizes[0], sizes[-1])
    noise = [
        {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in p.items()} for p in params
    ]
    return params, (x, y, noise)


def gpt_data(size, n, per=None):
    import gpt_data_parallel as ex

    vocab, d, heads, t, b = config(size, "gpt", per)
    rng = np.random.default_rng(0)
    params = ex.init_params(rng, vocab, d, heads, t)
    tokens, targets = ex.make_batch(rng, b * n, vocab, t)
    return params, (tokens, targets)


def steps(M, mesh, workload, size, per=None):
    """(data-parallel step, single-device step, data of the global batch) of ``M`` (functx or
    jax); ``per``: the batch per GPU (None: ``SIZES``'s). DP-SGD: JAX takes the per-example
    gradients in blocks of ``PEER_CHUNK`` examples, functx the whole batch."""
    if workload == "dpsgd":
        import dp_sgd_data_parallel as ex

        chunk = None if M.__name__ == "functx" else PEER_CHUNK[size]
        dp = ex.data_parallel_step(M, mesh, CLIP, SIGMA, LR, chunk)
        one = ex.single_device_step(M, CLIP, SIGMA, LR, chunk)
        return dp, one, dpsgd_data(size, mesh.size, per)
    import gpt_data_parallel as ex

    heads = SIZES[size]["gpt"][2]
    dp = ex.data_parallel_step(M, mesh, LR, heads)
    one = ex.single_device_step(M, LR, heads)
    return dp, one, gpt_data(size, mesh.size, per)


def first_params(out, workload):
    return out[0] if workload == "gpt" else out


def max_rel(a_leaves, b_leaves, base_leaves=None) -> float:
    """The largest |a - b| over the largest |b| (over the largest |b - base|: the update, where
    ``base_leaves``, the parameters before the step, are given)."""
    num = den = 0.0
    base_leaves = base_leaves or [0.0] * len(b_leaves)
    for a, b, c in zip(a_leaves, b_leaves, base_leaves, strict=True):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        num = max(num, float(np.max(np.abs(a - b))))
        den = max(den, float(np.max(np.abs(b - np.asarray(c, np.float64)))))
    return num / max(den, 1e-30)


def measure(fn, sync, agree=float, steps_per_loop=None, loops=5, warm_s=1.0, loop_s=0.2):
    """Time ``fn`` (one step): a warm-up of at least ``warm_s`` seconds and 3 calls, then
    ``loops`` loops of ``steps_per_loop`` calls (None: enough for ``loop_s`` seconds), each
    ended by ``sync``. ``agree(count)`` makes the counts the same in every process (the largest).
    Returns ``t`` (the median loop's time per step), ``spread`` ((slowest - fastest) / median),
    ``steps`` (per loop) and ``t_warm`` (the warm-up's time per step)."""
    t0 = time.perf_counter()
    out = [fn() for _ in range(3)][-1]
    sync(out)
    est = (time.perf_counter() - t0) / 3
    n_warm = int(agree(min(5000, math.ceil(warm_s / est))))
    t0 = time.perf_counter()
    for _ in range(n_warm):
        out = fn()
    sync(out)
    est = (time.perf_counter() - t0) / n_warm
    k = steps_per_loop or int(agree(min(2000, max(1, math.ceil(loop_s / est)))))
    times = []
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(k):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t0) / k)
    t = statistics.median(times)
    return {"t": t, "spread": (max(times) - min(times)) / t, "steps": k, "t_warm": est}


def timeit(fn, sync, steps_per_loop, reps=5) -> float:
    """The median time per step of ``reps`` loops of ``steps_per_loop`` steps (``measure``)."""
    return measure(fn, sync, steps_per_loop=steps_per_loop, loops=reps)["t"]


def suffixed(rec: dict, suffix: str) -> dict:
    return {k + suffix: v for k, v in rec.items()}


def cases(args):
    """(workload, batch per GPU) in the order every worker runs them."""
    return [(w, per) for w in args.workloads for per in args.per[w]]


def host_and_gpu_time(fn, platform, steps_per_loop, reps=2) -> dict:
    """Where a step's time goes (after ``measure``'s warm-up): ``t_host``, the host's time per
    call to issue ``steps_per_loop`` calls (no synchronisation inside the loop), and, on a GPU,
    ``t_gpu``, the median time between CUDA events recorded on the stream before and after one
    call (the device's time for the step, its waits for the other processes included)."""
    import torch

    out = {}
    hosts, gpus = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps_per_loop):
            fn()
        hosts.append((time.perf_counter() - t0) / steps_per_loop)
        if platform == "gpu":
            torch.cuda.synchronize()
            pairs = []
            for _ in range(steps_per_loop):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                pairs.append((a, b))
            torch.cuda.synchronize()
            gpus += [a.elapsed_time(b) / 1e3 for a, b in pairs]
    out["t_host"] = statistics.median(hosts)
    if gpus:
        out["t_gpu"] = statistics.median(gpus)
    return out


def graph_info(jitted) -> str:
    """How the jitted step's Triton program runs: CUDA graphs or not (and why), their mode and
    how many were captured."""
    infos = []
    for entry in list(jitted.cache.values()):
        obj = entry[0]
        for _ in range(4):  # (DeviceExecutable -> JitExecutable -> TritonExecutable)
            if hasattr(obj, "graph_safe"):
                break
            obj = getattr(obj, "exe", None) or getattr(obj, "inner", None)
        if obj is None or not hasattr(obj, "graph_safe"):
            continue
        states = [s if isinstance(s, str) else type(s).__name__ for s in obj._graphs.values()]
        infos.append(
            f"graphs {obj.use_graphs}, safe {obj.graph_safe}, mode {obj.graph_mode}, "
            f"{obj.n_launches} launches, {len(obj.host_calls)} host steps, states {states}"
            + (f", note {obj.graph_note}" if obj.graph_note else "")
        )
    return "; ".join(infos) or "no Triton program"


def profile_table(fn, rows=25) -> str:
    """torch.profiler's table of the GPU kernels of 5 calls of ``fn`` (this process)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    return prof.key_averages().table(
        sort_by="cuda_time_total", row_limit=rows, max_name_column_width=70
    )


# --- functx: one process per device ---------------------------------------------------------------
def agree_max(platform):
    """``agree`` for ``measure`` over the processes of a run: the largest value of any rank."""
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", torch.cuda.current_device()) if platform == "gpu" else "cpu"

    def agree(v):
        t = torch.tensor([float(v)], dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    return agree


def worker_functx(args):
    import functx

    functx.distributed.initialize(platform=args.platform)
    rank, n = functx.process_index(), functx.process_count()
    functx.distributed.make_groups([tuple(range(n))])
    local = functx.local_devices()[0]
    put = (lambda t: functx.device_put(t, local)) if args.platform == "gpu" else (lambda t: t)
    for workload, per in cases(args):
        rec = {"lib": "functx", "workload": workload, "per": per, "n": n}
        try:
            functx_case(functx, args, workload, per, n, put, rec)
        except Exception as e:  # noqa: BLE001 - reported in the table
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        if rank == 0:
            emit(rec, args.out)
    functx.distributed.shutdown()


def functx_case(functx, args, workload, per, n, put, rec):
    """Check and time functx's data-parallel step at ``n`` GPUs (this process is one of them)
    into ``rec``."""
    rank, sync, agree = functx.process_index(), functx.block_until_ready, agree_max(args.platform)
    mesh = functx.sharding.Mesh(np.array(functx.devices()), ("data",))
    dp, one, (params, batch) = steps(functx, mesh, workload, args.size, per)
    p, b = put(params), put(batch)
    step, plain = functx.jit(dp), functx.jit(one)
    out = step(p, *b)
    if rank == 0:  # against the single-device step on the global batch
        leaves = functx.tree_util.tree_leaves
        ref = first_params(plain(p, *b), workload)
        rec["err"] = max_rel(leaves(first_params(out, workload)), leaves(ref), leaves(params))
    rec.update(measure(lambda: step(p, *b), sync, agree, warm_s=args.warmup))
    rec.update(host_and_gpu_time(lambda: step(p, *b), args.platform, rec["steps"]))
    rec["graph"] = graph_info(step)
    if args.profile and args.platform == "gpu" and n in (1, max(args.gpus)):
        table = profile_table(lambda: step(p, *b))  # (every rank: the same collectives)
        if rank == 0:
            print(f"== functx {workload} ({per} per GPU) at {n} GPUs: the step's kernels (rank 0)")
            print(table, flush=True)
    if n == 1:  # the baseline: the plain single-device step, no shard_map
        rec.update(suffixed(measure(lambda: plain(p, *b), sync, warm_s=args.warmup), "_plain"))
        hg = host_and_gpu_time(lambda: plain(p, *b), args.platform, rec["steps_plain"])
        rec.update(suffixed(hg, "_plain"))
        return
    if n == max(args.gpus) and not args.no_reduction:
        rec.update(reduction_alone(functx, mesh, params, put, agree, args))
    if n == max(args.gpus) and args.overlap and workload in args.overlap_workloads.split(","):
        rec["overlap"] = overlap_sweep(functx, dp, p, b, agree, args)


def _with_env(env: dict, fn):
    """``fn()`` with the environment variables ``env`` set (restored afterwards)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _overlap_env(setting: str) -> dict:
    """``off``: the psum after the whole backward pass (no overlap); ``256K``, ``4M``, ...: the
    overlapped psum with buckets of that many bytes."""
    if setting == "off":
        return {"FUNCTX_PSUM_OVERLAP": "0"}
    unit = {"K": 2**10, "M": 2**20}.get(setting[-1].upper(), 1)
    num = setting[:-1] if setting[-1].upper() in "KM" else setting
    return {"FUNCTX_PSUM_OVERLAP": "1", "FUNCTX_PSUM_BUCKET_BYTES": str(int(float(num) * unit))}


def overlap_sweep(functx, dp, p, b, agree, args) -> dict:
    """The step's time (ms) with the gradient reduction not overlapped (``off``) and with other
    bucket sizes: each setting is compiled afresh (``functx.clear_caches``)."""
    out = {}
    for setting in args.overlap.split(","):

        def timed():
            functx.clear_caches()
            f = functx.jit(dp)
            f(p, *b)
            return measure(lambda: f(p, *b), functx.block_until_ready, agree, warm_s=0.5)["t"]

        try:
            out[setting] = _with_env(_overlap_env(setting), timed)
        except Exception as e:  # noqa: BLE001 - reported in the table
            out[setting] = f"{type(e).__name__}: {e}"[:120]
            traceback.print_exc()
    functx.clear_caches()
    return out


def reduction_alone(functx, mesh, params, put, agree, args) -> dict:
    """What the gradients' reduction costs alone at this mesh size: ``t_allreduce``, one
    ``all_reduce`` of the flat float32 gradients with ``torch.distributed`` (NCCL's time, no
    functx); ``t_psum``, functx's jitted ``psum`` of the parameter pytree (its program: the
    reduction plus its copies)."""
    import torch
    import torch.distributed as dist

    leaves = functx.tree_util.tree_leaves(params)
    numel = sum(int(np.size(v)) for v in leaves)
    dev = torch.device("cuda", torch.cuda.current_device()) if args.platform == "gpu" else "cpu"
    flat = torch.zeros(numel, dtype=torch.float32, device=dev)

    def tsync(_):
        if args.platform == "gpu":
            torch.cuda.synchronize()

    out = {"t_allreduce": measure(lambda: dist.all_reduce(flat), tsync, agree, warm_s=0.3)["t"]}
    P = functx.sharding.PartitionSpec
    f = functx.jit(
        functx.shard_map(
            lambda t: functx.lax.psum(t, "data"), mesh=mesh, in_specs=P(), out_specs=P()
        )
    )
    pp = put(params)
    out["t_psum"] = measure(lambda: f(pp), functx.block_until_ready, agree, warm_s=0.3)["t"]
    return out


# --- PyTorch: DDP ---------------------------------------------------------------------------------
def _torch_mlp_loss(torch, sizes):
    def loss(params, x, y):
        h = x
        for i in range(len(sizes) - 2):
            h = torch.tanh(h @ params[f"w{i}"] + params[f"b{i}"])
        k = len(sizes) - 2
        logits = h @ params[f"w{k}"] + params[f"b{k}"]
        return torch.logsumexp(logits, -1) - logits.gather(-1, y[..., None].long())[..., 0]

    return loss


def _torch_gpt(torch, params, heads):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.ParameterDict(
                {
                    k.replace(".", "_"): nn.Parameter(torch.tensor(v))
                    for k, v in _flat_params(params).items()
                }
            )

        def forward(self, tokens, targets):
            P = self.p
            F = torch.nn.functional
            h = P["embed"][tokens.long()]
            b, t, d = h.shape

            def ln(x, g, bb):
                mu = x.mean(-1, keepdim=True)
                var = ((x - mu) ** 2).mean(-1, keepdim=True)
                return (x - mu) / torch.sqrt(var + 1e-5) * g + bb

            q, k, v = (ln(h, P["ln1_g"], P["ln1_b"]) @ P["qkv"]).split(d, dim=-1)

            def sh(z):
                return z.reshape(b, t, heads, d // heads).transpose(1, 2)

            q, k, v = sh(q), sh(k), sh(v)
            s = q @ k.transpose(-1, -2) / float(np.sqrt(d // heads))
            causal = torch.ones(t, t, dtype=torch.bool, device=h.device).tril()
            s = torch.where(causal, s, torch.tensor(-1e9, device=h.device))
            att = torch.softmax(s, -1) @ v
            h = h + att.transpose(1, 2).reshape(b, t, d) @ P["proj"]
            m = F.gelu(ln(h, P["ln2_g"], P["ln2_b"]) @ P["fc1"], approximate="tanh") @ P["fc2"]
            logits = (h + m) @ P["head"]
            logp = torch.log_softmax(logits, -1)
            return -logp.gather(-1, targets.long()[..., None]).mean()

    return Block()


def _flat_params(params):
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update({f"{k}_{kk}": vv for kk, vv in v.items()})
        else:
            out[k] = v
    return out


def worker_torch(args):
    import torch
    import torch.distributed as dist

    backend = "nccl" if args.platform == "gpu" else "gloo"
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", rank) if args.platform == "gpu" else torch.device("cpu")
    if args.platform == "gpu":
        torch.cuda.set_device(dev)
        torch.set_float32_matmul_precision("high")  # TF32 products, as JAX's and functx's
    dist.init_process_group(backend, rank=rank, world_size=n)
    agree = agree_max(args.platform)

    def sync(_):
        if args.platform == "gpu":
            torch.cuda.synchronize()

    for workload, per in cases(args):
        rec = {"lib": "torch", "workload": workload, "per": per, "n": n}
        try:
            case = _torch_dpsgd if workload == "dpsgd" else _torch_gpt_steps
            dp_step, plain_step, check = case(torch, args, per, n, rank, dev)
            err = check()  # (every rank takes the first data-parallel step; rank 0 compares)
            if rank == 0:
                rec["err"] = err
            rec.update(measure(dp_step, sync, agree, warm_s=args.warmup))
            if n == 1:
                rec.update(suffixed(measure(plain_step, sync, warm_s=args.warmup), "_plain"))
        except Exception as e:  # noqa: BLE001 - reported in the table
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        if rank == 0:
            emit(rec, args.out)
    dist.destroy_process_group()


def _torch_dpsgd(torch, args, per, n, rank, dev):
    """(data-parallel step, plain step, check) of DP-SGD: per-example gradients with
    ``torch.func`` in blocks of ``PEER_CHUNK`` examples, clipped and summed into one flat
    buffer, one ``all_reduce`` of it, the noised SGD update."""
    import torch.distributed as dist
    from torch.func import grad, vmap

    sizes, b = config(args.size, "dpsgd", per)
    params, (x, y, noise) = dpsgd_data(args.size, n, per)

    def tensors(tree):
        return {
            f"{k}{i}": torch.tensor(v, device=dev) for i, p in enumerate(tree) for k, v in p.items()
        }

    P, Z = tensors(params), tensors(noise)
    loss = _torch_mlp_loss(torch, sizes)
    per_sample = vmap(grad(lambda p, a, c: loss(p, a[None], c[None])[0]), in_dims=(None, 0, 0))
    X, Y = torch.tensor(x, device=dev), torch.tensor(y, device=dev)
    chunk = PEER_CHUNK[args.size]

    def clipped_sum(p, xb, yb):
        flat = torch.zeros(sum(v.numel() for v in p.values()), device=dev)
        sums, i = {}, 0
        for k, v in p.items():
            sums[k], i = flat[i : i + v.numel()].view(v.shape), i + v.numel()
        for j in range(0, xb.shape[0], chunk):
            g = per_sample(p, xb[j : j + chunk], yb[j : j + chunk])
            sq = sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values())
            scale = torch.clamp(CLIP / (sq.sqrt() + 1e-12), max=1.0)
            for k, v in g.items():
                sums[k] += torch.tensordot(scale, v, dims=1)
        return flat, sums

    def step(p, xb, yb, reduce):
        flat, sums = clipped_sum(p, xb, yb)
        if reduce:
            dist.all_reduce(flat)
        return {k: p[k] - LR * (sums[k] + SIGMA * CLIP * Z[k]) / (b * n) for k in p}

    mine = slice(rank * b, (rank + 1) * b)

    def check():
        got = step(P, X[mine], Y[mine], True)
        if rank == 0:
            ref = step(P, X, Y, False)
            return max_rel(*([t[k].cpu() for k in P] for t in (got, ref, P)))

    return (lambda: step(P, X[mine], Y[mine], True)), (lambda: step(P, X, Y, False)), check


def _torch_gpt_steps(torch, args, per, n, rank, dev):
    """(DDP step, plain step, check) of the GPT block: DDP with its gradients as views of its
    buckets, a static graph and ``--ddp-bucket-mb`` buckets; SGD with one ``_foreach_add_``."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    heads, b = config(args.size, "gpt", per)[2], config(args.size, "gpt", per)[4]
    params, (tokens, targets) = gpt_data(args.size, n, per)
    T, Tg = torch.tensor(tokens, device=dev), torch.tensor(targets, device=dev)
    mine = slice(rank * b, (rank + 1) * b)
    model = _torch_gpt(torch, params, heads).to(dev)
    ddp = DDP(
        model,
        bucket_cap_mb=args.ddp_bucket_mb,
        gradient_as_bucket_view=True,
        static_graph=True,
    )
    plain = _torch_gpt(torch, params, heads).to(dev)

    def step(module, tok, tgt):
        module.zero_grad(set_to_none=False)
        loss = module(tok, tgt)
        loss.backward()
        with torch.no_grad():
            ps = [p for p in module.parameters() if p.grad is not None]
            torch._foreach_add_(ps, [p.grad for p in ps], alpha=-LR)
        return loss

    def check():
        before = [p.detach().cpu().clone() for p in model.parameters()]
        step(ddp, T[mine], Tg[mine])
        if rank == 0:
            ref = _torch_gpt(torch, params, heads).to(dev)
            step(ref, T, Tg)
            new = [[p.detach().cpu() for p in m.parameters()] for m in (model, ref)]
            return max_rel(*new, before)

    return (lambda: step(ddp, T[mine], Tg[mine])), (lambda: step(plain, T[mine], Tg[mine])), check


# --- JAX: one process, n devices ------------------------------------------------------------------
def worker_jax(args):
    import jax

    devices = jax.devices("gpu" if args.platform == "gpu" else "cpu")
    n = len(devices)  # (the driver shows this process n devices)
    P = jax.sharding.PartitionSpec
    mesh = jax.sharding.Mesh(np.array(devices), ("data",))
    rep = jax.sharding.NamedSharding(mesh, P())
    split = jax.sharding.NamedSharding(mesh, P("data"))
    sync = jax.block_until_ready
    for workload, per in cases(args):
        rec = {"lib": "jax", "workload": workload, "per": per, "n": n}
        try:
            dp, one, (params, batch) = steps(jax, mesh, workload, args.size, per)
            p = jax.device_put(params, rep)
            b = [jax.device_put(v, s) for v, s in zip(batch, [split, split, rep])]
            f, plain = jax.jit(dp), jax.jit(one)
            out = f(p, *b)
            # against the single-device step on the global batch
            p1, b1 = jax.device_put(params, devices[0]), jax.device_put(batch, devices[0])
            ref = plain(p1, *b1)
            leaves = jax.tree_util.tree_leaves
            news = [leaves(first_params(o, workload)) for o in (out, ref)]
            rec["err"] = max_rel(*news, leaves(params))
            del ref, p1, b1

            def step():  # (on the CPU, XLA's collectives stall with many steps queued)
                out = f(p, *b)
                return sync(out) if args.platform == "cpu" else out

            rec.update(measure(step, sync, warm_s=args.warmup))
            if n == 1:  # the baseline: the plain single-device step, no shard_map
                p1, b1 = jax.device_put(params, devices[0]), jax.device_put(batch, devices[0])
                rec.update(
                    suffixed(measure(lambda: plain(p1, *b1), sync, warm_s=args.warmup), "_plain")
                )
        except Exception as e:  # noqa: BLE001 - reported in the table
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        emit(rec, args.out)


# --- the driver -----------------------------------------------------------------------------------
def emit(rec, path):
    line = json.dumps(rec)
    print("RESULT " + line, flush=True)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def summary(rec) -> str:
    """One line of a result, as it comes."""
    head = f"{rec['lib']} {rec['workload']} {rec['per']}/GPU at {rec['n']}:"
    if "t" not in rec:
        return f"{head} {rec.get('error', 'no time')}"
    line = f"{head} {ms(rec['t'])} ms (spread {rec['spread']:.0%}, warm-up {ms(rec['t_warm'])})"
    if "t_plain" in rec:
        line += f", plain {ms(rec['t_plain'])} (spread {rec['spread_plain']:.0%})"
    if "err" in rec:
        line += f", check {rec['err']:.1e}"
    return line


def _descendants(pid: int) -> list[int]:
    """The processes started by ``pid``, their children and so on (from ``/proc``)."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        kids = [c for c, p in parent.items() if p == todo[-1]]
        todo.pop()
        out += kids
        todo += kids
    return out


def stop(proc):
    """End a launch that ran out of time: the launcher and every worker (torch's launcher
    starts each worker in a session of its own), SIGTERM then SIGKILL."""
    pids = [proc.pid, *_descendants(proc.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(1)
        pids = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not pids:
            return


def launch(lib, n, args, path, timeout, log):
    """Run ``lib``'s worker over ``n`` GPUs (processes, or one process's devices) for at most
    ``timeout`` seconds, printing each result as it comes."""
    common = [
        "--worker", lib, "--platform", args.platform, "--size", args.size,
        "--warmup", str(args.warmup), "--overlap", args.overlap,
        *(["--profile"] if args.profile else []), "--dpsgd-per-gpu", args.dpsgd_per_gpu,
        "--gpt-per-gpu", args.gpt_per_gpu, "--ddp-bucket-mb", str(args.ddp_bucket_mb),
        "--overlap-workloads", args.overlap_workloads,
        *(["--no-reduction"] if args.no_reduction else []), "--gpus", ",".join(map(str, args.gpus)),
        "--workloads", ",".join(args.workloads), "--out", path,
    ]  # fmt: skip
    script = os.path.abspath(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    if lib == "functx":
        cmd = [sys.executable, "-m", "functx.distributed", "--nproc", str(n), script, *common]
    elif lib == "torch":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
               "--nproc_per_node", str(n), script, *common]  # fmt: skip
    else:
        cmd = [sys.executable, script, *common]
        if args.platform == "cpu":
            env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
            env["JAX_PLATFORMS"] = "cpu"
        else:  # the first n GPUs, as the other libraries' n processes take
            seen = env.get("CUDA_VISIBLE_DEVICES")
            ids = seen.split(",") if seen else [str(i) for i in range(n)]
            env["CUDA_VISIBLE_DEVICES"] = ",".join(ids[:n])
        # compiled programs and XLA's autotuning results shared by the JAX launches (the
        # compilation's time only)
        env.setdefault("JAX_COMPILATION_CACHE_DIR", args.jax_cache)
    t0 = time.time()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    tail = []

    def read():
        for line in proc.stdout:
            log.write(line)
            tail.append(line)
            del tail[:-40]
            if line.startswith("RESULT "):
                print("  " + summary(json.loads(line[7:])), flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
    except subprocess.TimeoutExpired:
        status = f"TIMED OUT after {timeout:.0f} s"
        stop(proc)
    reader.join(timeout=10)
    log.flush()
    print(f"[{lib} at {n} GPUs: {status} in {time.time() - t0:.0f} s]", flush=True)
    if status != "ok":
        print("".join(tail)[-1500:], flush=True)


def ms(t) -> str:
    return f"{t * 1e3:.3f}" if isinstance(t, float) else str(t)


def table(path, args):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    by = {(r["lib"], r["workload"], r["per"], r["n"]): r for r in recs}
    print("\nms per step; efficiency = plain single-device step / step; spread: the largest")
    print("(slowest - fastest loop) / median of the row")
    head = " | ".join(f"{n} GPUs (eff.)" for n in args.gpus if n > 1)
    print(f"| workload | per GPU | library | 1 GPU (plain) | {head} | spread | check vs 1 device |")
    print("|---|---|---|---|" + "---|" * (len(args.gpus) + 1))
    for w, per in cases(args):
        for lib in args.libs.split(","):
            t1 = by.get((lib, w, per, 1), {}).get("t_plain")
            cells, errs, spread = [], [], []
            for n in args.gpus:
                r = by.get((lib, w, per, n), {})
                if "t" not in r:
                    cells.append(r.get("error", "not run")[:60])
                    continue
                cell = ms(r["t"])
                if "t_plain" in r:
                    cell += f" (plain {ms(r['t_plain'])})"
                elif t1:
                    cell += f" ({t1 / r['t']:.0%})"
                cells.append(cell)
                spread += [r[k] for k in ("spread", "spread_plain") if k in r]
                errs.append(f"{r['err']:.1e}" if "err" in r else "-")
            spread = f"{max(spread):.0%}" if spread else "-"
            cells += [spread, ", ".join(errs) or "-"]
            print(f"| {w} | {per} | {lib} | " + " | ".join(cells) + " |")
    for (lib, w, per, n), r in sorted(by.items(), key=str):
        if lib != "functx" or "t" not in r:
            continue
        head = f"functx {w} ({per} per GPU) at {n}:"
        if "t_gpu" in r:
            plain = f"; plain step: GPU {ms(r['t_gpu_plain'])}" if "t_gpu_plain" in r else ""
            print(f"{head} ms per call: GPU {ms(r['t_gpu'])}, host {ms(r['t_host'])}{plain}")
        if "t_allreduce" in r:
            print(
                f"{head} the reduction alone: torch all_reduce of the flat gradients "
                f"{ms(r['t_allreduce'])} ms, functx's psum program {ms(r['t_psum'])} ms"
            )
        if "overlap" in r:
            cells = ", ".join(f"{k} {ms(v)}" for k, v in r["overlap"].items())
            print(f"{head} the step (ms) with the psum overlap {cells} (default {ms(r['t'])})")
        others = [(o, by.get((o, w, per, n), {}).get("t")) for o in ("jax", "torch")]
        ratio = ", ".join(f"{o} {t / r['t']:.2f}x" for o, t in others if t)
        if ratio:
            print(f"{head} peer's time / functx's: {ratio}")
        if r.get("graph", "no Triton program") != "no Triton program":
            print(f"{head} {r['graph']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--gpus", default="1,2,4")
    ap.add_argument("--workloads", default="dpsgd,gpt")
    ap.add_argument("--libs", default="functx,jax,torch")
    ap.add_argument(
        "--dpsgd-per-gpu",
        default="",
        help="DP-SGD's batches per GPU to run (e.g. 256,1024; default: --size's)",
    )
    ap.add_argument(
        "--gpt-per-gpu",
        default="",
        help="the GPT block's batches (sequences) per GPU to run (e.g. 16,64; default: --size's)",
    )
    ap.add_argument(
        "--warmup", type=float, default=1.0, help="seconds of warm-up before each timing"
    )
    ap.add_argument(
        "--deadline", type=float, default=450, help="seconds for the whole run (every launch)"
    )
    ap.add_argument(
        "--timeout",
        default="functx=150,jax=120,torch=80",
        help="seconds each library's launch may take (at most what is left of --deadline)",
    )
    ap.add_argument("--ddp-bucket-mb", type=float, default=25, help="torch DDP's bucket size")
    ap.add_argument(
        "--overlap",
        default="",
        help="functx at the largest n: also time the step with these psum settings (off: no "
        "overlap; a size: buckets of that many bytes, e.g. off,2M)",
    )
    ap.add_argument("--overlap-workloads", default="dpsgd", help="the workloads --overlap times")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="functx: torch.profiler's kernel table of the step at 1 and the largest n (rank 0; "
        "in multi_gpu.log beside the results)",
    )
    ap.add_argument(
        "--no-reduction",
        action="store_true",
        help="functx: skip timing the reduction alone at the largest n (a shorter run)",
    )
    ap.add_argument("--worker", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.gpus = [int(n) for n in args.gpus.split(",")]
    args.workloads = args.workloads.split(",")
    args.per = {
        w: [int(v) for v in given.split(",")] if given else [config(args.size, w)[-1]]
        for w, given in (("dpsgd", args.dpsgd_per_gpu), ("gpt", args.gpt_per_gpu))
    }
    if args.worker:
        {"functx": worker_functx, "torch": worker_torch, "jax": worker_jax}[args.worker](args)
        return
    t_end = time.time() + args.deadline
    out_dir = os.environ.get("OUT") or tempfile.mkdtemp()
    path = os.path.join(out_dir, "multi_gpu.jsonl")
    if os.path.exists(path):
        os.remove(path)
    args.jax_cache = tempfile.mkdtemp(prefix="multi_gpu_jax_")
    print(
        f"multi_gpu: {args.platform}, sizes {SIZES[args.size]}, GPUs {args.gpus}, batches per "
        f"GPU {args.per}; results in {path}",
        flush=True,
    )
    limits = {k: float(v) for k, v in (kv.split("=") for kv in args.timeout.split(","))}
    order = sorted(set(args.gpus), key=lambda n: (n != 1, n != max(args.gpus), n))
    with open(os.path.join(out_dir, "multi_gpu.log"), "w") as log:
        for n in order:
            for lib in args.libs.split(","):
                left = t_end - time.time() - 5  # (5 s for the table)
                if left < 20:
                    print(f"[{lib} at {n} GPUs: not run, {left + 5:.0f} s left]", flush=True)
                    continue
                launch(lib, n, args, path, min(limits.get(lib, 120), left), log)
    table(path, args)


if __name__ == "__main__":
    main()
