"""``functx.distributed``: one process per device, collectives through ``torch.distributed``.

JAX runs a multi-device program in one process per host and moves data with XLA's collectives;
functx runs one process per device (one per GPU, or several on one CPU) and moves data with
``torch.distributed``: NCCL between GPUs, gloo between CPU processes. Start the processes with
torch's launcher, or with the thin wrapper over it::

    python -m functx.distributed --nproc 4 train.py --steps 10

and call ``functx.distributed.initialize()`` at the top of the script: it reads the launcher's
environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), joins the
process group and makes ``functx.devices()`` list every process's device, ``functx.process_index()``
this process's rank and ``functx.process_count()`` their number. ``functx.shard_map`` then runs
its body in every process on that process's shard, and the collectives of ``functx.lax`` (``psum``,
``all_gather``, ``ppermute``, ...) inside it go through ``TorchCollectives``, the handler of the
"spmd" axis frames (``functx.control.collectives``).

Data movement: on the CPU a NumPy buffer is handed to torch without a copy where the collective
does not write into its input (``all_reduce`` does, so it works on a copy); on a GPU the arrays
are torch tensors already and NCCL works on them in place.
"""

from __future__ import annotations

import datetime
import gc
import os

import numpy as np

from functx.devices import device as _device
from functx.errors import missing_name_hook as _missing_name_hook
from functx.jit import clear_caches as _clear_caches

__all__ = ["initialize", "is_initialized", "shutdown"]


class _Run:
    """What ``initialize`` set up: the rank, the number of processes, the platform, this
    process's device and every process's device (``ProcessDevice``)."""

    def __init__(self, rank, size, local_rank, platform, backend):
        self.rank, self.size, self.local_rank = rank, size, local_rank
        self.platform, self.backend = platform, backend
        if platform == "gpu":
            gpus = _device.gpu_devices()
            self.local = gpus[local_rank % len(gpus)]
        else:
            self.local = _device.CPU
        self.devices = [
            ProcessDevice(r, platform, r, self.local if r == rank else None) for r in range(size)
        ]
        self.groups: dict[tuple[int, ...], object] = {}


_run: _Run | None = None


class ProcessDevice(_device.Device):
    """The device of one process of a distributed run, as ``functx.devices()`` lists it after
    ``initialize()``: ``id`` and ``process_index`` are the process's rank; ``local`` is the
    device object arrays use in this process (None for another process's device)."""

    def __init__(self, id, platform, process_index, local):  # noqa: A002 (JAX's name)
        super().__init__(id)
        self.platform = platform
        self.process_index = process_index
        self.local = local
        self.device_kind = local.device_kind if local is not None else platform

    def __repr__(self):
        return f"{'CpuDevice' if self.platform == 'cpu' else 'CudaDevice'}(id={self.id})"


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids=None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    coordinator_bind_address: str | None = None,
    slice_index: int | None = None,
    partition_index: int | None = None,
    *,
    platform: str | None = None,
) -> None:
    """Join a distributed run of one process per device (``jax.distributed.initialize``), over
    ``torch.distributed``: NCCL on GPUs, gloo on the CPU.

    Arguments:
      coordinator_address: "host:port" of process 0; None: ``MASTER_ADDR``/``MASTER_PORT`` from
        the launcher's environment.
      num_processes: the number of processes; None: ``WORLD_SIZE``.
      process_id: this process's rank; None: ``RANK``.
      local_device_ids: the GPU this process uses (an int or a one-element list); None:
        ``LOCAL_RANK``.
      cluster_detection_method, heartbeat_timeout_seconds, shutdown_timeout_seconds,
        coordinator_bind_address, slice_index, partition_index: accepted for JAX's signature.
      initialization_timeout: seconds to wait for the other processes.
      platform: "cpu" (gloo) or "gpu" (NCCL); None: "gpu" when torch sees CUDA, else "cpu".
    Returns:
      None. Afterwards ``functx.devices()`` lists one device per process and
      ``functx.process_index()`` is this process's rank.

    Differences from JAX: one process per device (JAX: per host) over ``torch.distributed``;
    ``platform=`` is functx's own (JAX 0.10.2 has no such argument) and picks gloo or NCCL.

    Example:
      >>> import socket
      >>> import functx
      >>> with socket.socket() as s:  # a free port for the coordinator
      ...     s.bind(("127.0.0.1", 0))
      ...     port = s.getsockname()[1]
      >>> functx.distributed.initialize(f"127.0.0.1:{port}", 1, 0, platform="cpu")
      >>> functx.process_count(), functx.process_index(), functx.devices()
      (1, 0, [CpuDevice(id=0)])
      >>> functx.distributed.shutdown()
    """
    global _run
    if _run is not None:
        raise RuntimeError("functx.distributed.initialize should only be called once.")
    import torch
    import torch.distributed as dist

    env = os.environ
    rank = int(process_id if process_id is not None else env.get("RANK", 0))
    size = int(num_processes if num_processes is not None else env.get("WORLD_SIZE", 1))
    if isinstance(local_device_ids, (list, tuple)):
        local_device_ids = local_device_ids[0] if local_device_ids else None
    local_rank = int(
        local_device_ids if local_device_ids is not None else env.get("LOCAL_RANK", rank)
    )
    if platform is None:
        platform = "gpu" if torch.cuda.is_available() else "cpu"
    if platform not in ("cpu", "gpu"):
        raise ValueError(
            f"functx.distributed.initialize: platform={platform!r}; use 'cpu' or 'gpu'"
        )
    backend = "nccl" if platform == "gpu" else "gloo"
    if coordinator_address is not None:
        init_method = f"tcp://{coordinator_address}"
    else:
        addr = env.get("MASTER_ADDR", "127.0.0.1")
        init_method = f"tcp://{addr}:{env.get('MASTER_PORT', '29500')}"
    kwargs = {}
    if platform == "gpu":
        torch.cuda.set_device(local_rank)
        kwargs["device_id"] = torch.device("cuda", local_rank)
        if (opts := _nccl_options()) is not None:
            kwargs["pg_options"] = opts
    if not dist.is_initialized():
        dist.init_process_group(
            backend,
            init_method=init_method,
            rank=rank,
            world_size=size,
            timeout=datetime.timedelta(seconds=initialization_timeout),
            **kwargs,
        )
    _run = _Run(rank, size, local_rank, platform, backend)
    run = _run

    def devices(backend=None):
        if backend is None or _canon(backend) == run.platform:
            return list(run.devices)
        return _device._local(backend)

    def local_devices(backend=None):
        if backend is None or _canon(backend) == run.platform:
            return [run.local]
        return _device._local(backend)

    _device.processes.update(
        devices=devices, local_devices=local_devices, process_index=rank, process_count=size
    )


def _canon(backend):
    name = backend.lower()
    return "gpu" if name == "cuda" else name


def is_initialized() -> bool:
    """Whether ``initialize()`` has run in this process (``jax.distributed.is_initialized``).

    Arguments:
      (none)
    Returns:
      A bool.
    Example:
      >>> import functx
      >>> functx.distributed.is_initialized()
      False
    """
    return _run is not None


def shutdown() -> None:
    """Leave the distributed run (``jax.distributed.shutdown``): clears the compiled programs
    (``functx.clear_caches``: their collectives belong to this run), destroys the torch process
    group and makes ``functx.devices()`` this process's devices again.

    Arguments:
      (none)
    Returns:
      None.
    Example:
      >>> import functx
      >>> functx.distributed.shutdown()  # nothing to do when not initialized
    """
    global _run
    if _run is None:
        return
    import torch.distributed as dist

    if dist.is_initialized():
        # compiled programs whose CUDA graphs hold NCCL collectives go first: NCCL waits on
        # their communicators when the process group is destroyed, and shutdown hung (2 and 4
        # H200s, torch 2.11); their programs referred to this run's process groups anyway
        _clear_caches()
        gc.collect()
        if _run.platform == "gpu":
            import torch

            torch.cuda.synchronize()
        dist.destroy_process_group()
    _run = None
    _device.processes.clear()


def current():
    """The ``_Run`` of this process, or None outside a distributed run."""
    return _run


# --- collectives ----------------------------------------------------------------------------------
_REDUCE = {"sum": "SUM", "max": "MAX", "min": "MIN"}


def _nccl_options():
    """NCCL's options for functx's process groups: its streams at high priority, so that a
    reduction started beside the backward pass's kernels (``TorchCollectives.psum_start``) gets
    the multiprocessors as they free up, as DDP's overlap wants. None without NCCL."""
    import torch.distributed as dist

    cls = getattr(dist, "ProcessGroupNCCL", None)
    if cls is None:
        return None
    opts = cls.Options()
    opts.is_high_priority_stream = True
    # FUNCTX_NCCL_MAX_CTAS: at most this many thread blocks per NCCL collective (ncclConfig_t's
    # maxCTAs), leaving the rest of the multiprocessors to the kernels that run beside it
    ctas = os.environ.get("FUNCTX_NCCL_MAX_CTAS")
    if ctas and hasattr(getattr(opts, "config", None), "max_ctas"):
        opts.config.max_ctas = int(ctas)
    return opts


def _group(ranks: tuple[int, ...]):
    """The torch process group of ``ranks`` (None: every process). Every process must ask for the
    same groups in the same order (``torch.distributed.new_group`` is collective)."""
    run = _run
    if ranks in run.groups:
        return run.groups[ranks]
    if len(ranks) == run.size:
        return None
    if ranks not in run.groups:
        import torch.distributed as dist

        opts = _nccl_options() if run.backend == "nccl" else None
        kw = {"pg_options": opts} if opts is not None else {}
        run.groups[ranks] = dist.new_group(list(ranks), **kw)
    return run.groups[ranks]


def make_groups(rank_lists) -> None:
    """Create the process groups of ``rank_lists`` (every process calls this with the same lists,
    in the same order)."""
    for ranks in rank_lists:
        _group(tuple(ranks))


class TorchCollectives:
    """The handler of an "spmd" axis frame in a distributed run: the axis's processes are
    ``ranks`` (global ranks, in axis order); each method takes this process's value (a NumPy
    array, or a torch tensor on the GPU) and returns the result of the collective, of the same
    kind."""

    def __init__(self, ranks):
        self.ranks = tuple(int(r) for r in ranks)
        self.size = len(self.ranks)
        self.index = self.ranks.index(_run.rank)
        self.group = _group(self.ranks)
        self.torch = self  # the same methods take torch tensors (NCCL without host copies)
        # NCCL's collectives only queue work on the device, so a compiled program's CUDA graph
        # may record them (functx.control.collectives.CollectiveStep.graph_safe); gloo's wait on
        # the host
        self.graph_safe = _run.backend == "nccl"

    # conversions ---------------------------------------------------------------------------------
    def _tensor(self, x, writable: bool):
        import torch

        if isinstance(x, torch.Tensor):
            t = x.contiguous()
            if _run.backend == "nccl" and t.device.type != "cuda":
                t = t.to(_run.local.torch_device)
            elif writable:
                t = t.clone()
            return t, "torch"
        a = np.asarray(x)
        if writable or not a.flags.c_contiguous or not a.flags.writeable:
            a = np.array(a, order="C", copy=True)
        t = torch.from_numpy(a) if a.ndim else torch.from_numpy(a.reshape(1))
        if _run.backend == "nccl":
            t = t.to(_run.local.torch_device)
        return t, ("numpy", a.shape, a.dtype)

    def _back(self, t, kind, shape=None):
        if kind == "torch":
            return t
        out = t.cpu().numpy()
        return out.reshape(kind[1] if shape is None else shape)

    def _gather(self, t):
        """Every process's ``t``, stacked: shape (size, *t.shape)."""
        import torch
        import torch.distributed as dist

        out = torch.empty((self.size, *t.shape), dtype=t.dtype, device=t.device)
        if _run.backend == "nccl":
            dist.all_gather_into_tensor(out, t, group=self.group)
        else:
            dist.all_gather(list(out.unbind(0)), t, group=self.group)
        return out

    # the collectives ----------------------------------------------------------------------------
    def _reduce(self, x, op):
        import torch.distributed as dist

        t, kind = self._tensor(x, writable=True)
        u = t.to(_torch_uint8()) if t.dtype == _torch_bool() else t
        dist.all_reduce(u, op=getattr(dist.ReduceOp, _REDUCE[op]), group=self.group)
        if u is not t:
            u = u.to(t.dtype)
        return self._back(u, kind)

    def psum(self, x):
        return self._reduce(x, "sum")

    def psum_flat(self, tensors, async_op: bool = False):
        """The sums over the axis of several torch tensors of one dtype, as one reduction: the
        flat concatenation of their sums (one ``all_reduce``; bool by its own path). With
        ``async_op``: ``(flat, work)``, the reduction started (``work.wait()`` makes the calling
        stream, or on gloo the calling thread, wait for it; None when it already finished)."""
        import torch
        import torch.distributed as dist

        flat = torch.cat([t.reshape(-1) for t in tensors])
        if flat.dtype == _torch_bool():
            out = self._reduce(flat, "sum")
            return (out, None) if async_op else out
        work = dist.all_reduce(flat, group=self.group, async_op=async_op)
        return (flat, work) if async_op else flat

    def psum_start(self, xs):
        """Start the sums over the axis of ``xs`` (torch tensors, or NumPy arrays on gloo): one
        ``all_reduce`` per dtype over the flat concatenation, issued without waiting (NCCL:
        queued on its own stream after the work already queued on the calling stream, so the
        caller's later kernels run beside it; gloo: on its own thread). Returns the handle
        ``psum_done`` takes. What DDP's buckets do: a data-parallel step starts each bucket of
        gradients as soon as the backward pass has produced it (``CollectiveStep``'s
        ``psum_start``/``psum_done`` pair in a compiled program). Operands that fill a pack (a
        compiled Triton program's flat buffer of the bucket, ``_pack_of``) are reduced in place
        instead: one ``all_reduce`` of the pack, whose views are then the sums."""
        import torch.distributed as dist

        ts = [self._tensor(x, writable=False)[0] for x in xs]
        by_dtype: dict = {}
        for i, t in enumerate(ts):
            by_dtype.setdefault(t.dtype, []).append(i)
        pending = []
        for idx in by_dtype.values():
            bases: dict = {}  # (views of one buffer: maybe a compiled program's pack)
            for i in idx:
                b = ts[i]._base
                bases.setdefault(id(b) if b is not None else ("own", i), []).append(i)
            rest = []
            for members in bases.values():
                pack = _pack_of([ts[i] for i in members])
                if pack is None:
                    rest += members
                    continue
                # the pack reduced in place: its views are the sums (no copy in or out)
                work = dist.all_reduce(pack, group=self.group, async_op=True)
                pending.append((members, None, [ts[i].reshape(-1) for i in members], work))
            if rest:
                flat, work = self.psum_flat([ts[i] for i in sorted(rest)], async_op=True)
                pending.append((sorted(rest), [ts[i].numel() for i in sorted(rest)], flat, work))
        return len(ts), pending

    def psum_done(self, handle):
        """Wait for the sums ``psum_start`` began (the calling stream waits on NCCL's; gloo
        blocks) and return them: one flat torch tensor per operand, in the operands' order."""
        n, pending = handle
        out = [None] * n
        for idx, sizes, flat, work in pending:
            if work is not None:
                work.wait()
            for i, piece in zip(idx, flat if sizes is None else flat.split(sizes)):
                out[i] = piece
        return out

    def pmax(self, x):
        return self._reduce(x, "max")

    def pmin(self, x):
        return self._reduce(x, "min")

    def all_gather(self, x, axis, tiled):
        t, kind = self._tensor(x, writable=False)
        t = t.reshape(np.shape(x))
        g = self._gather(t)  # (size, *shape)
        if tiled:
            g = g.movedim(0, axis)
            shape = list(t.shape)
            shape[axis] *= self.size
            g = g.reshape(shape)
        else:
            g = g.movedim(0, axis)
        return self._back(g.contiguous(), kind, tuple(g.shape))

    def psum_scatter(self, x, scatter_dimension, tiled):
        import torch.distributed as dist

        t, kind = self._tensor(x, writable=True)
        t = t.reshape(np.shape(x))
        n, d = self.size, scatter_dimension
        if _run.backend == "nccl":
            chunks = t.movedim(d, 0).contiguous()
            out_shape = (chunks.shape[0] // n, *chunks.shape[1:])
            out = chunks.new_empty(out_shape)
            dist.reduce_scatter_tensor(out, chunks, group=self.group)
        else:  # gloo has no reduce_scatter: reduce everything, keep this process's block
            dist.all_reduce(t, group=self.group)
            chunks = t.movedim(d, 0)
            m = chunks.shape[0] // n
            out = chunks[self.index * m : (self.index + 1) * m]
        if not tiled:
            out = out[0]
            res = out
        else:
            res = out.movedim(0, d)
        res = res.contiguous()
        return self._back(res, kind, tuple(res.shape))

    def all_to_all(self, x, split_axis, concat_axis, tiled):
        import torch
        import torch.distributed as dist

        t, kind = self._tensor(x, writable=False)
        t = t.reshape(np.shape(x))
        n = self.size
        parts = list(torch.chunk(t, n, dim=split_axis)) if tiled else list(t.unbind(split_axis))
        parts = [p.contiguous() for p in parts]
        if _run.backend == "nccl":
            recv = [torch.empty_like(p) for p in parts]
            dist.all_to_all(recv, parts, group=self.group)
        else:  # gloo has no all_to_all: gather everything, keep the blocks sent here
            stacked = self._gather(torch.stack(parts))  # (n senders, n blocks, ...)
            recv = [stacked[j, self.index] for j in range(n)]
        if tiled:
            res = torch.cat(recv, dim=concat_axis)
        else:
            res = torch.stack(recv, dim=concat_axis)
        res = res.contiguous()
        return self._back(res, kind, tuple(res.shape))

    def ppermute(self, x, perm):
        import torch
        import torch.distributed as dist

        t, kind = self._tensor(x, writable=False)
        t = t.reshape(np.shape(x))
        out = torch.zeros_like(t)
        ops = []
        for src, dst in perm:
            if src == self.index and dst == self.index:
                out = t.clone()
            elif src == self.index:
                ops.append(dist.P2POp(dist.isend, t, self.ranks[dst], self.group))
            elif dst == self.index:
                ops.append(dist.P2POp(dist.irecv, out, self.ranks[src], self.group))
        if ops:
            for req in dist.batch_isend_irecv(ops):
                req.wait()
        return self._back(out, kind, tuple(out.shape))

    def axis_index(self):
        return np.int32(self.index)


# A compiled Triton program places an overlapped psum's operands one after another in one flat
# buffer per dtype, each at the next multiple of this many bytes (functx/lowering/triton/
# program.py's PACK_ALIGN, checked equal by tests/test_distributed.py)
PACK_SLACK = 256


def _pack_of(ts):
    """The flat buffer that the torch tensors ``ts`` fill, when they are views of one 1-D
    buffer marked as a pack (``_fx_pack``, set by the program that allocated it) that holds
    nothing else (each starting within ``PACK_SLACK`` bytes of the
    previous one's end, the first at its start, the last ending within ``PACK_SLACK`` bytes of
    its end: a compiled program's pack), or None. An all_reduce of that buffer in place sums
    every one of them and touches no other value."""
    base = ts[0]._base if ts else None
    if base is None or not getattr(base, "_fx_pack", False) or base.dim() != 1:
        return None
    size = base.element_size()
    slack = PACK_SLACK // size
    spans = []
    for t in ts:
        if t._base is not base or not t.is_contiguous() or t.dtype != base.dtype:
            return None
        start = (t.data_ptr() - base.data_ptr()) // size
        spans.append((start, start + t.numel()))
    end = 0
    for start, stop in sorted(spans):
        if not end <= start < end + max(slack, 1):
            return None
        end = stop
    return base if end <= base.numel() < end + max(slack, 1) else None


def _torch_bool():
    import torch

    return torch.bool


def _torch_uint8():
    import torch

    return torch.uint8


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)
