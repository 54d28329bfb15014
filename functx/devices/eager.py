"""Eager GPU execution: ``bind_eager`` (an operation outside any trace, on the device its
operands live on: each primitive traced alone, compiled with the Triton backend and cached by
primitive, parameters, operand types, device and matmul precision), and what ``jit`` uses to run
a program on a GPU (``DeviceExecutable``, ``gpu_signature``, ``check_consts``).

The compiler is above this package: ``compilers`` is the table ``functx.jit`` fills.
"""

from __future__ import annotations

import numpy as np

from functx import core, tracing
from functx.array import Array, UncommittedArray, is_python_scalar, scalar_aval
from functx.config import matmul_precision
from functx.devices.device import CPU, CudaDevice, DeviceError
from functx.devices.gpu_array import GpuArray, host_to_torch, torch_dtype
from functx.devices.transfer import is_torch_tensor, leaf_to, op_device
from functx.errors import FunctxError
from functx.source_info import where

# --- Eager operations -----------------------------------------------------------------------------
_OP_CACHE: dict = {}
_OP_CACHE_MAX = 4096


def bind_eager(prim, args, params):
    """Run one primitive outside any trace where its operands live (see ``functx.devices``)."""
    device, committed = op_device(args, prim.name)
    if device is CPU:
        host = [leaf_to(a, CPU, commit=False) if isinstance(a, GpuArray) else a for a in args]
        return tracing.bind_host(prim, host, params, committed)
    return _run_on_gpu(prim, args, params, device, committed)


def _gpu_leaf(a, device):
    """The value an executable on ``device`` receives for operand ``a`` (and its aval)."""
    if type(a) is GpuArray:
        t = a._value if a._device is device else a._value.to(device.torch_device, copy=True)
        return t, a.aval
    if is_python_scalar(a):
        aval = scalar_aval(a)
        return _scalar_tensor(np.asarray(a, aval.dtype), device), aval
    if type(a) is Array:  # a host scalar (op_device refused host arrays with data)
        return _scalar_tensor(a._value, device), a.aval
    if type(a) is UncommittedArray:
        return host_to_torch(a._value, device), a.aval
    if is_torch_tensor(a):
        if a.device.type == "cuda":
            return a, tracing.get_aval(a)
        a = np.asarray(a.detach())
    v, aval, _ = tracing.as_value(a)  # a NumPy scalar or 0-d array
    return _scalar_tensor(v, device), aval


_SCALARS: dict = {}  # (dtype, bytes, device) -> a 0-d tensor on the device (never changed)


def _scalar_tensor(value: np.ndarray, device):
    """A host scalar (a 0-d NumPy value) as a 0-d tensor on ``device``, made there by a fill (no
    synchronous copy from the host) and kept for the next operation with the same value."""
    key = (value.dtype, value.tobytes(), device)  # the bits: -0.0 is not 0.0
    t = _SCALARS.get(key)
    if t is None:
        import torch

        t = torch.full((), value.item(), dtype=torch_dtype(value.dtype), device=device.torch_device)
        if len(_SCALARS) >= 1024:
            _SCALARS.pop(next(iter(_SCALARS)))
        _SCALARS[key] = t
    return t


def _run_on_gpu(prim, args, params, device, committed):
    leaves, avals = [], []
    for a in args:
        v, av = _gpu_leaf(a, device)
        leaves.append(v)
        avals.append(av)
    out_avals = tracing.abstract_eval_checked(prim, avals, params)
    key = (
        prim,
        tuple(params.items()),
        tuple(avals),
        device,
        matmul_precision() if prim.name == "dot_general" else None,
    )
    try:
        exe = _OP_CACHE.get(key)
    except TypeError:  # unhashable parameters: compile without caching
        key, exe = None, None
    if exe is None:
        exe = _compile_op(prim, params, avals)
        if key is not None:
            if len(_OP_CACHE) >= _OP_CACHE_MAX:
                _OP_CACHE.pop(next(iter(_OP_CACHE)))
            _OP_CACHE[key] = exe
    outs = call_on(device, exe, leaves)
    if not prim.multiple_results:
        return _wrap_gpu(outs[0], out_avals, device, committed)
    return [_wrap_gpu(o, a, device, committed) for o, a in zip(outs, out_avals)]


# How eager GPU operations compile: backend name -> fn(closed, what) returning an executable
# for ``closed`` (a ClosedJaxpr of one equation), after logging ``what`` (FUNCTX_LOG_COMPILES).
# The compiler sits above this package (functx.lowering), so functx.jit fills it at import:
# compilers["triton"].
compilers: dict = {}


def _compile_op(prim, params, avals):
    """A Triton executable for one equation ``prim`` on operands of ``avals``."""

    def one(*xs):
        out = prim.bind(*xs, **params)
        return (list(out) if prim.multiple_results else [out]), None

    closed, _ = tracing.trace_flat(one, avals)
    compile_fn = compilers.get("triton")
    if compile_fn is None:
        raise FunctxError("internal: no eager GPU compiler is registered (functx.jit does that)")
    return compile_fn(
        closed,
        f"compiling eager {prim.name} for the GPU: "
        f"{', '.join(a.str_short() for a in avals) or 'no operands'}",
    )


def call_on(device, exe, leaves):
    """Call a Triton executable for ``device`` (kernels launch on the current CUDA device)."""
    if isinstance(device, CudaDevice):
        import torch

        if torch.cuda.current_device() != device.id:
            with torch.cuda.device(device.id):
                return exe(leaves)
    return exe(leaves)


def _wrap_gpu(t, aval, device, committed):
    tdev = device.torch_device
    if t.device != tdev and not (
        tdev.type == "cuda" and t.device.type == "cuda" and t.device.index in (None, tdev.index)
    ):
        # a program without tensor inputs allocates on torch's default device
        t = t.to(tdev)
    return GpuArray._new(t, aval, device, committed)


# --- jit ------------------------------------------------------------------------------------------
class DeviceExecutable:
    """What ``jit`` keeps for a program compiled for a GPU: unwraps GPU arrays into torch tensors,
    calls the Triton executable and wraps its outputs as GPU arrays."""

    def __init__(self, exe, out_avals, device):
        self.exe = exe
        self.out_avals = list(out_avals)
        self.device = device
        self._run_on = exe.run_on
        self._tdev = device.torch_device
        self._cuda_index = None  # the CUDA device the kernels must launch on (None: interpreter)
        if isinstance(device, CudaDevice):
            import torch

            self._cuda_index = device.id
            self._current = torch._C._cuda_getDevice

    def __call__(self, leaves):
        dev = self.device
        ins, foreign = [], None
        for a in leaves:
            if type(a) is GpuArray and a._device is dev:
                ins.append(a._value)
            elif is_torch_tensor(a):
                ins.append(a)
                foreign = foreign or []
                foreign.append(a)
            else:
                ins.append(_gpu_leaf(a, dev)[0])
        outs = call_on(dev, self.exe, ins)
        if foreign:  # never alias a buffer the caller may change
            outs = [o.clone() if any(o is f for f in foreign) else o for o in outs]
        return [_wrap_gpu(o, a, dev, True) for o, a in zip(outs, self.out_avals)]

    def call_arrays(self, args):
        """``self(args)`` for GPU arrays that ``gpu_signature`` accepted for this device (their
        buffers are contiguous tensors of the compiled types there): ``jit``'s fast path."""
        index = self._cuda_index
        if index is not None and self._current() != index:
            return self(list(args))
        outs = self._run_on(self._tdev, [a._value for a in args])
        dev, new = self.device, object.__new__
        res = []
        for o, a in zip(outs, self.out_avals):  # (GpuArray._new, inline: the hot path)
            x = new(GpuArray)
            x._value, x.aval, x._device, x._committed = o, a, dev, True
            res.append(x)
        return res


def gpu_signature(args):
    """``(aval, ..., device, matmul precision)`` when every argument is a GPU array committed to
    one device, else None: the key of ``jit``'s dispatch fast path (what the full key holds for
    such arguments, without flattening them or looking at their placement again). Arguments
    that are tuples, lists or dicts of such arrays: ``gpu_tree_signature``."""
    found = gpu_tree_signature(args)
    return None if found is None else found[0]


def gpu_tree_signature(args):
    """``(signature, leaves)`` when ``args`` are GPU arrays committed to one device, or tuples,
    lists and dicts (sortable keys) of them and None, else None. The signature: per array its
    aval, per tuple or list ``(type, length)`` and per dict ``(dict, sorted keys)`` before its
    contents, per None None; then the device and the matmul precision. The leaves come in
    optree's order (a dict's by sorted key, None no leaf), the order of the program's inputs.
    One Python walk: optree's flatten and the placement checks took longer than the rest of a
    small step's call."""
    sig, leaves = [], []
    dev = _walk_gpu(args, sig, leaves, None, 0)
    if dev is None:
        return None
    sig.append(dev)
    sig.append(matmul_precision())
    return tuple(sig), leaves


def _walk_gpu(items, sig: list, leaves: list, dev, depth: int):
    """Append ``items``' signatures and leaves (``gpu_tree_signature``); returns the device
    of the arrays, or None where one is not a committed GPU array on it (or not a container
    the walk takes, or nested past 32 levels)."""
    for x in items:
        t = type(x)
        if t is GpuArray:
            if not x._committed or (dev is not None and x._device is not dev):
                return None
            dev = x._device
            sig.append(x.aval)
            leaves.append(x)
        elif (t is tuple or t is list) and depth < 32:
            sig.append((t, len(x)))
            dev = _walk_gpu(x, sig, leaves, dev, depth + 1)
        elif t is dict and depth < 32:
            try:
                names = sorted(x)  # (optree's order)
            except TypeError:
                return None
            sig.append((dict, tuple(names)))
            dev = _walk_gpu([x[k] for k in names], sig, leaves, dev, depth + 1)
        elif x is None:
            sig.append(None)
        else:
            return None
        if dev is None and t is not type(None):
            return None
    return dev


def check_consts(consts, device, what: str) -> None:
    """A jitted program's captured arrays: host ones become constants of the program (copied to
    the device once, with the program); ones committed to another device are an error."""
    for c in consts:
        if isinstance(c, GpuArray) and c._committed and c._device is not device:
            raise DeviceError(
                f"{what} runs on {device} (where its arguments are) but uses an array "
                f"{c.aval.str_short()} committed to {c._device} that it closes over{where()}. "
                "Pass it as an argument, or move it with functx.device_put(x, device)."
            )


core.eager_rules["gpu"] = bind_eager
