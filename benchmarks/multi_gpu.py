"""Data-parallel scaling (issue 22): the DP-SGD step and the GPT block step of ``examples/`` at
1, 2 and 4 GPUs, weak scaling (the same batch per GPU), for functx (``shard_map`` over one process
per GPU, NCCL through ``torch.distributed``), JAX (``jax.shard_map`` over the GPUs of one process)
and PyTorch (``DistributedDataParallel`` for the GPT block; per-sample gradients with
``torch.func`` and one ``all_reduce`` of the clipped sum for DP-SGD).

Run from the repository root on a machine with 4 GPUs (one command, at most 8.5 minutes: each
library's launch has a time limit, ``--timeout``)::

    python benchmarks/multi_gpu.py

On a CPU (gloo between processes, JAX over ``--xla_force_host_platform_device_count`` host
devices, small sizes), to check the script itself::

    python benchmarks/multi_gpu.py --platform cpu --size quick --gpus 1,2

Three launches: functx and PyTorch each start 4 processes once (``python -m functx.distributed``
and ``torch.distributed.run``) and time every configuration in them (for n < 4 the mesh, or the
DDP group, is the first n processes; the others wait); JAX runs in one process. Each library's
n-GPU step is first checked against its single-device step on the whole (global) batch (the
largest |difference| / max |reference| over the new parameters is printed), then timed: the
median over 5 loops of ``--steps`` steps, each loop ended by a synchronisation.

Efficiency is weak-scaling efficiency, t1 / tn with t the time per step (each GPU's work is the
same at every n; t1 is the plain single-device step, jitted without ``shard_map``, where the
library's worker times it: functx and JAX): the throughput at n GPUs over n times the throughput
at one. (Per processed sample, t = step time / global batch, that is the issue's t1 / (n * tn).)
Results stream as JSON lines to ``$OUT/multi_gpu.jsonl`` when ``OUT`` is set.

functx's data-parallel psum is overlapped with the backward pass (each bucket of gradients
starts its ``all_reduce`` when the backward pass has produced it: ``--overlap`` times the step
at the largest n without that, ``off``, and with other bucket sizes), and at each n > 1 the
reduction alone is timed: one ``torch.distributed.all_reduce`` of the flat gradients, and
functx's jitted ``psum`` of them. ``--ctas 2,4,8`` also times the step at the largest n with NCCL
limited to that many thread blocks per collective (a process group made with that option).

Weak-scaling efficiency depends on the work per GPU: ``--dpsgd-per-gpu 256,1024`` and
``--gpt-per-gpu 16,64`` run each example at several batches per GPU (every size is reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import numpy as np  # noqa: E402

SIZES = {
    # dpsgd: MLP sizes, batch per GPU; gpt: vocab, d, heads, T, batch per GPU
    "full": {"dpsgd": ((784, 1024, 1024, 10), 256), "gpt": (4096, 512, 8, 256, 16)},
    "quick": {"dpsgd": ((32, 64, 10), 16), "gpt": (64, 32, 4, 16, 4)},
}
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
    """(data-parallel step, single-device step, data) of ``M`` (functx or jax); ``per``: the
    batch per GPU (None: ``SIZES``'s)."""
    if workload == "dpsgd":
        import dp_sgd_data_parallel as ex

        dp = ex.data_parallel_step(M, mesh, CLIP, SIGMA, LR)
        one = ex.single_device_step(M, CLIP, SIGMA, LR)
        return dp, one, dpsgd_data(size, mesh.size, per)
    import gpt_data_parallel as ex

    heads = SIZES[size]["gpt"][2]
    dp = ex.data_parallel_step(M, mesh, LR, heads)
    one = ex.single_device_step(M, LR, heads)
    return dp, one, gpt_data(size, mesh.size, per)


def first_params(out, workload):
    return out[0] if workload == "gpt" else out


def max_rel(a_leaves, b_leaves) -> float:
    err = 0.0
    for a, b in zip(a_leaves, b_leaves, strict=True):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        err = max(err, float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)))
    return err


def timeit(fn, sync, steps_per_loop, reps=5, warmup=3) -> float:
    out = None
    for _ in range(warmup):
        out = fn()
    sync(out)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps_per_loop):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t0) / steps_per_loop)
    return statistics.median(times)


def host_and_gpu_time(fn, platform, steps_per_loop, reps=5) -> dict:
    """Where a step's time goes (after ``timeit``'s warm-up): ``t_host``, the host's time per
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
def cases(args, gpus):
    """(workload, batch per GPU, n) in the order every worker runs them."""
    return [(w, per, n) for w in args.workloads for per in args.per[w] for n in gpus]


def worker_functx(args):
    import torch.distributed as dist

    import functx

    functx.distributed.initialize(platform=args.platform)
    rank, world = functx.process_index(), functx.process_count()
    local = functx.local_devices()[0]
    gpus = [n for n in args.gpus if n <= world]
    functx.distributed.make_groups([tuple(range(n)) for n in gpus])
    put = (lambda t: functx.device_put(t, local)) if args.platform == "gpu" else (lambda t: t)
    sync = functx.block_until_ready
    for workload, per, n in cases(args, gpus):
        rec = {"lib": "functx", "workload": workload, "per": per, "n": n}
        state = {}
        if rank < n:
            try:
                functx_case(functx, args, workload, per, n, put, sync, rec, state)
            except Exception as e:  # noqa: BLE001 - reported in the table
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                traceback.print_exc()
        if n == max(gpus) and n > 1 and args.ctas:
            # (every process: creating a group is collective; the mesh's processes time it)
            sweep = ctas_sweep(functx, n, rank, state, sync, args)
            if rank == 0:
                rec["ctas"] = sweep
        dist.barrier()
        if rank == 0:
            emit(rec, args.out)
    functx.distributed.shutdown()


def functx_case(functx, args, workload, per, n, put, sync, rec, state):
    """Check and time functx's data-parallel step at ``n`` GPUs (this process is one of them)
    into ``rec``; ``state`` gets the step and its arguments for the sweeps."""
    rank = functx.process_index()
    mesh = functx.sharding.Mesh(np.array(functx.devices()[:n]), ("data",))
    dp, one, (params, batch) = steps(functx, mesh, workload, args.size, per)
    p, b = put(params), put(batch)
    try:  # one program: the block slicing and the body (the body alone if not)
        step = functx.jit(dp)
        out = step(p, *b)
        rec["jit"] = "whole step"
    except Exception:  # noqa: BLE001 - fall back to shard_map's jitted body
        traceback.print_exc()
        step, rec["jit"] = dp, "body"
        out = dp(p, *b)
    state.update(dp=dp, p=p, b=b)
    if rank == 0 and n > 1:  # (at n = 1 the step is the single-device one)
        ref = functx.jit(one)(p, *b)
        rec["err"] = max_rel(
            functx.tree_util.tree_leaves(first_params(out, workload)),
            functx.tree_util.tree_leaves(first_params(ref, workload)),
        )
    rec["t"] = timeit(lambda: step(p, *b), sync, args.steps)
    rec.update(host_and_gpu_time(lambda: step(p, *b), args.platform, args.steps))
    rec["graph"] = graph_info(step)
    if args.profile and args.platform == "gpu" and n != 2:
        # (every rank of the mesh profiles: the same calls, the same collectives)
        table = profile_table(lambda: step(p, *b))
        if rank == 0:
            print(f"== functx {workload} ({per} per GPU) at {n} GPUs: the step's kernels (rank 0)")
            print(table, flush=True)
    if n == 1:  # the baseline: the plain single-device step, no shard_map
        plain = functx.jit(one)
        rec["t_plain"] = timeit(lambda: plain(p, *b), sync, args.steps)
        hg = host_and_gpu_time(lambda: plain(p, *b), args.platform, args.steps)
        rec.update({k + "_plain": v for k, v in hg.items()})
    elif not args.no_reduction:
        rec.update(reduction_alone(functx, mesh, params, put, sync, args))
    if n == max(args.gpus) and n > 1 and args.overlap:
        rec["overlap"] = overlap_sweep(functx, dp, p, b, sync, args)


def ctas_sweep(functx, n, rank, state, sync, args) -> dict:
    """The step at ``n`` GPUs with NCCL limited to at most ``k`` thread blocks per collective
    (``ncclConfig_t.maxCTAs``), for each ``k`` of ``--ctas``: a process group made with that
    option replaces the mesh's (``functx.distributed._regroup``; every process calls this),
    the step compiled afresh. ms per step, or the error."""
    import torch.distributed as dist

    out = {}
    ranks = tuple(range(n))
    old = functx.distributed.current().groups.get(ranks)
    for k in args.ctas.split(","):
        if not functx.distributed._regroup(ranks, max_ctas=int(k)):
            k += " (not applied)"
        functx._shard_map._frames_cache.clear()
        functx.clear_caches()
        if rank < n and "dp" in state:
            try:
                f, p, b = functx.jit(state["dp"]), state["p"], state["b"]
                f(p, *b)
                out[k] = timeit(lambda: f(p, *b), sync, args.steps)
            except Exception as e:  # noqa: BLE001 - reported in the table
                out[k] = f"{type(e).__name__}: {e}"[:120]
                traceback.print_exc()
        dist.barrier()
    run = functx.distributed.current()
    if old is None:
        run.groups.pop(ranks, None)
    else:
        run.groups[ranks] = old
    functx._shard_map._frames_cache.clear()
    functx.clear_caches()
    return out


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


def overlap_sweep(functx, dp, p, b, sync, args) -> dict:
    """The step's time (ms) with the gradient reduction not overlapped (``off``) and with other
    bucket sizes: each setting is compiled afresh (``functx.clear_caches``)."""
    out = {}
    for setting in args.overlap.split(","):

        def timed():
            functx.clear_caches()
            f = functx.jit(dp)
            f(p, *b)
            return timeit(lambda: f(p, *b), sync, args.steps)

        try:
            out[setting] = _with_env(_overlap_env(setting), timed)
        except Exception as e:  # noqa: BLE001 - reported in the table
            out[setting] = f"{type(e).__name__}: {e}"[:120]
            traceback.print_exc()
    functx.clear_caches()
    return out


def reduction_alone(functx, mesh, params, put, sync, args) -> dict:
    """What the gradients' reduction costs alone at this mesh size: ``t_allreduce``, one
    ``all_reduce`` of the flat float32 gradients with ``torch.distributed`` (NCCL's time, no
    functx); ``t_psum``, functx's jitted ``psum`` of the parameter pytree (its program: the
    reduction plus its copies)."""
    import torch
    import torch.distributed as dist

    out = {}
    leaves = functx.tree_util.tree_leaves(params)
    numel = sum(int(np.size(v)) for v in leaves)
    dev = torch.device("cuda", torch.cuda.current_device()) if args.platform == "gpu" else "cpu"
    group = functx.distributed.current().groups.get(tuple(range(mesh.size)))
    flat = torch.zeros(numel, dtype=torch.float32, device=dev)

    def ar():
        dist.all_reduce(flat, group=group)
        return flat

    def tsync(_):
        if args.platform == "gpu":
            torch.cuda.synchronize()

    out["t_allreduce"] = timeit(ar, tsync, args.steps)
    if args.platform == "gpu":  # the same all_reduce replayed from a CUDA graph
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                ar()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                ar()
            out["t_allreduce_graph"] = timeit(g.replay, tsync, args.steps)
        except Exception as e:  # noqa: BLE001 - reported in the table
            out["t_allreduce_graph"] = f"{type(e).__name__}: {e}"[:120]
    P = functx.sharding.PartitionSpec
    f = functx.jit(
        functx.shard_map(
            lambda t: functx.lax.psum(t, "data"), mesh=mesh, in_specs=P(), out_specs=P()
        )
    )
    pp = put(params)
    out["t_psum"] = timeit(lambda: f(pp), sync, args.steps)
    out["t_psum_host"] = host_and_gpu_time(lambda: f(pp), "cpu", args.steps)["t_host"]
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
    from torch.nn.parallel import DistributedDataParallel as DDP

    backend = "nccl" if args.platform == "gpu" else "gloo"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", rank) if args.platform == "gpu" else torch.device("cpu")
    if args.platform == "gpu":
        torch.cuda.set_device(dev)
    dist.init_process_group(backend, rank=rank, world_size=world)
    gpus = [n for n in args.gpus if n <= world]
    groups = {n: dist.new_group(list(range(n))) for n in gpus}

    def sync(_):
        if args.platform == "gpu":
            torch.cuda.synchronize()

    for workload, per, n in cases(args, gpus):
        rec = {"lib": "torch", "workload": workload, "per": per, "n": n}
        if rank < n:
            try:
                rec.update(
                    _torch_case(
                        torch, dist, DDP, args, workload, n, rank, dev, groups[n], sync, per
                    )
                )
            except Exception as e:  # noqa: BLE001 - reported in the table
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                traceback.print_exc()
        dist.barrier()
        if rank == 0:
            emit(rec, args.out)
    dist.destroy_process_group()


def _torch_case(torch, dist, DDP, args, workload, n, rank, dev, group, sync, per=None):
    rec = {}
    if workload == "dpsgd":
        from torch.func import grad, vmap

        sizes, b = config(args.size, "dpsgd", per)
        params, (x, y, noise) = dpsgd_data(args.size, n, per)
        P = {
            f"{k}{i}": torch.tensor(v, device=dev)
            for i, p in enumerate(params)
            for k, v in p.items()
        }
        Z = {
            f"{k}{i}": torch.tensor(v, device=dev)
            for i, p in enumerate(noise)
            for k, v in p.items()
        }
        loss = _torch_mlp_loss(torch, sizes)
        per_sample = vmap(grad(lambda p, a, c: loss(p, a[None], c[None])[0]), in_dims=(None, 0, 0))
        X, Y = torch.tensor(x, device=dev), torch.tensor(y, device=dev)

        def clipped_sum(p, xb, yb):
            g = per_sample(p, xb, yb)
            sq = sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values())
            scale = torch.clamp(CLIP / (sq.sqrt() + 1e-12), max=1.0)
            return {k: torch.tensordot(scale, v, dims=1) for k, v in g.items()}

        def update(p, s, total):
            return {k: p[k] - LR * (s[k] + SIGMA * CLIP * Z[k]) / total for k in p}

        def dp_step(p):
            s = clipped_sum(p, X[rank * b : (rank + 1) * b], Y[rank * b : (rank + 1) * b])
            flat = torch.cat([v.reshape(-1) for v in s.values()])
            dist.all_reduce(flat, group=group)
            out, i = {}, 0
            for k, v in s.items():
                out[k] = flat[i : i + v.numel()].reshape(v.shape)
                i += v.numel()
            return update(p, out, b * n)

        got = dp_step(P)
        if rank == 0:
            ref = update(P, clipped_sum(P, X, Y), b * n)
            rec["err"] = max_rel([got[k].cpu() for k in P], [ref[k].cpu() for k in P])
        rec["t"] = timeit(lambda: dp_step(P), sync, args.steps)
        return rec
    vocab, d, heads, t, b = config(args.size, "gpt", per)
    params, (tokens, targets) = gpt_data(args.size, n, per)
    model = _torch_gpt(torch, params, heads).to(dev)
    ref_model = _torch_gpt(torch, params, heads).to(dev)
    ddp = DDP(model, process_group=group)
    T, Tg = torch.tensor(tokens, device=dev), torch.tensor(targets, device=dev)
    mine = slice(rank * b, (rank + 1) * b)

    def dp_step():
        ddp.zero_grad(set_to_none=True)
        loss = ddp(T[mine], Tg[mine])
        loss.backward()
        with torch.no_grad():
            for p in ddp.parameters():
                p -= LR * p.grad
        return loss

    dp_step()
    if rank == 0:
        loss = ref_model(T, Tg)
        loss.backward()
        with torch.no_grad():
            for p in ref_model.parameters():
                p -= LR * p.grad
        rec["err"] = max_rel(
            [p.detach().cpu() for p in model.parameters()],
            [p.detach().cpu() for p in ref_model.parameters()],
        )
    rec["t"] = timeit(dp_step, sync, args.steps)
    return rec


# --- JAX: one process, n devices ------------------------------------------------------------------
def worker_jax(args):
    import jax

    devices = jax.devices("gpu" if args.platform == "gpu" else "cpu")
    P = jax.sharding.PartitionSpec
    for workload, per, n in cases(args, [n for n in args.gpus if n <= len(devices)]):
        rec = {"lib": "jax", "workload": workload, "per": per, "n": n}
        try:
            mesh = jax.sharding.Mesh(np.array(devices[:n]), ("data",))
            dp, one, (params, batch) = steps(jax, mesh, workload, args.size, per)
            rep = jax.sharding.NamedSharding(mesh, P())
            split = jax.sharding.NamedSharding(mesh, P("data"))
            p = jax.device_put(params, rep)
            bs = [split, split] + ([rep] if workload == "dpsgd" else [])
            b = [jax.device_put(v, s) for v, s in zip(batch, bs)]
            f = jax.jit(dp)
            out = f(p, *b)
            ref = jax.jit(one)(
                jax.device_put(params, devices[0]), *jax.device_put(batch, devices[0])
            )
            rec["err"] = max_rel(
                jax.tree_util.tree_leaves(first_params(out, workload)),
                jax.tree_util.tree_leaves(first_params(ref, workload)),
            )
            rec["t"] = timeit(lambda: f(p, *b), jax.block_until_ready, args.steps)
            if n == 1:  # the baseline: the plain single-device step, no shard_map
                p1 = jax.device_put(params, devices[0])
                b1 = jax.device_put(batch, devices[0])
                plain = jax.jit(one)
                rec["t_plain"] = timeit(lambda: plain(p1, *b1), jax.block_until_ready, args.steps)
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


def launch(lib, args, path, timeout):
    world = max(args.gpus)
    common = [
        "--worker", lib, "--platform", args.platform, "--size", args.size,
        "--steps", str(args.steps), "--gpus", ",".join(map(str, args.gpus)),
        "--overlap", args.overlap, *(["--profile"] if args.profile else []),
        "--ctas", args.ctas, "--dpsgd-per-gpu", args.dpsgd_per_gpu,
        "--gpt-per-gpu", args.gpt_per_gpu, *(["--no-reduction"] if args.no_reduction else []),
        "--workloads", ",".join(args.workloads), "--out", path,
    ]  # fmt: skip
    script = os.path.abspath(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    if lib == "functx":
        cmd = [sys.executable, "-m", "functx.distributed", "--nproc", str(world), script, *common]
    elif lib == "torch":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
               "--nproc_per_node", str(world), script, *common]  # fmt: skip
    else:
        cmd = [sys.executable, script, *common]
        if args.platform == "cpu":
            env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={world}"
            env["JAX_PLATFORMS"] = "cpu"
    env.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
        ok = proc.returncode == 0
        tail = (proc.stdout + proc.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        ok, tail = False, f"timed out after {timeout} s\n" + str(e.stdout or "")[-1500:]
    print(f"[{lib}: {'ok' if ok else 'FAILED'} in {time.time() - t0:.0f} s]", flush=True)
    if not ok:
        print(tail, flush=True)
    elif args.profile and lib == "functx":  # (the workers' kernel tables)
        text = proc.stdout
        if "== functx" in text:
            keep = [ln for ln in text[text.index("== functx") :].splitlines() if "RESULT" not in ln]
            print("\n".join(keep), flush=True)


def table(path, args):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    by = {(r["lib"], r["workload"], r.get("per"), r["n"]): r for r in recs}
    print()
    print(
        "| workload | per GPU | library | "
        + " | ".join(f"{n} GPU ms/step (eff)" for n in args.gpus)
        + " | check vs 1 device |"
    )
    print("|---|---|---|" + "---|" * (len(args.gpus) + 1))
    for w in args.workloads:
        for per, lib in [(per, lib) for per in args.per[w] for lib in ("functx", "jax", "torch")]:
            cells, errs = [], []
            # efficiency against the plain single-device step where it was timed (the
            # stricter baseline), else against the data-parallel step on one device
            r1 = by.get((lib, w, per, 1), {})
            t1 = r1.get("t_plain", r1.get("t"))
            for n in args.gpus:
                r = by.get((lib, w, per, n), {})
                if "t" in r:
                    eff = f" ({t1 / r['t']:.0%})" if t1 and n > 1 else ""
                    plain = f" (plain step {r['t_plain'] * 1e3:.2f})" if "t_plain" in r else ""
                    cells.append(f"{r['t'] * 1e3:.2f}{eff}{plain}")
                else:
                    cells.append(r.get("error", "not run")[:60])
                if "err" in r:
                    errs.append(f"{r['err']:.1e}")
            row = f"| {w} | {per} | {lib} | " + " | ".join(cells)
            print(row + f" | {', '.join(errs) or '-'} |")
    for (lib, w, per, n), r in sorted(by.items(), key=str):
        if lib != "functx":
            continue
        w = f"{w} ({per} per GPU)"
        if "t_host" in r:
            parts = [f"host {r['t_host'] * 1e3:.3f}"]
            if "t_gpu" in r:
                parts.append(f"GPU {r['t_gpu'] * 1e3:.3f}")
            if "t_host_plain" in r:
                parts.append(f"plain step: host {r['t_host_plain'] * 1e3:.3f}")
            if "t_gpu_plain" in r:
                parts.append(f"GPU {r['t_gpu_plain'] * 1e3:.3f}")
            print(f"functx {w} at {n}: ms per call: " + ", ".join(parts) + f"; {r.get('graph')}")
        if "t_allreduce" in r:
            tg = r.get("t_allreduce_graph")
            tg = f"{tg * 1e3:.3f} ms" if isinstance(tg, float) else tg
            print(
                f"functx {w} at {n}: the reduction alone: torch all_reduce of the flat gradients "
                f"{r['t_allreduce'] * 1e3:.3f} ms (replayed from a CUDA graph: {tg}), functx "
                f"psum program {r['t_psum'] * 1e3:.3f} ms (its host time per call "
                f"{r.get('t_psum_host', float('nan')) * 1e3:.3f} ms)"
            )
        if "overlap" in r:
            cells = ", ".join(
                f"{k} {v * 1e3:.2f} ms" if isinstance(v, float) else f"{k} {v}"
                for k, v in r["overlap"].items()
            )
            dflt = r["t"] * 1e3
            print(f"functx {w} at {n}: step with the psum overlap {cells} (default {dflt:.2f})")
        if "ctas" in r:
            cells = ", ".join(
                f"{k} {v * 1e3:.2f} ms" if isinstance(v, float) else f"{k} {v}"
                for k, v in r["ctas"].items()
            )
            print(f"functx {w} at {n}: step with NCCL's thread blocks at most {cells}")
    fx = {k: v for k, v in by.items() if k[0] == "functx" and "t" in v}
    for (_, w, per, n), r in sorted(fx.items(), key=str):
        others = [by.get((o, w, per, n), {}).get("t") for o in ("jax", "torch")]
        ratio = ", ".join(f"{o} {r['t'] / t:.2f}x" for o, t in zip(("jax", "torch"), others) if t)
        if ratio:
            print(f"functx {w} ({per} per GPU) at {n}: functx time / {ratio}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--gpus", default="1,2,4")
    ap.add_argument("--workloads", default="dpsgd,gpt")
    ap.add_argument("--libs", default="functx,jax,torch")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument(
        "--overlap",
        default="off,2M,32M",
        help="functx at the largest n: also time the step with these psum settings (off: no "
        "overlap; a size: buckets of that many bytes); empty: none",
    )
    ap.add_argument(
        "--timeout",
        default="functx=260,jax=120,torch=100",
        help="seconds each library's launch may take (the whole run stays under 8.5 minutes)",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="functx: print torch.profiler's kernel table of the step at 1 and 4 GPUs (rank 0)",
    )
    ap.add_argument(
        "--ctas",
        default="",
        help="functx at the largest n: also time the step with NCCL limited to these numbers "
        "of thread blocks per collective (e.g. 2,4,8); empty: none",
    )
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
        "--no-reduction",
        action="store_true",
        help="functx: skip timing the reduction alone at n > 1 (a shorter run)",
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
    out_dir = os.environ.get("OUT") or tempfile.mkdtemp()
    path = os.path.join(out_dir, "multi_gpu.jsonl")
    if os.path.exists(path):
        os.remove(path)
    print(
        f"multi_gpu: {args.platform}, sizes {SIZES[args.size]}, GPUs {args.gpus}, batches per "
        f"GPU {args.per}",
        flush=True,
    )
    limits = dict(kv.split("=") for kv in args.timeout.split(","))
    for lib in args.libs.split(","):
        launch(lib, args, path, int(limits.get(lib, 200)))
    table(path, args)


if __name__ == "__main__":
    main()
