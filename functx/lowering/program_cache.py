"""A disk index from a final Jaxpr to its compiled C++ program, so that a warm process skips
lowering, scheduling and code generation (and never imports SymPy).

``compile.py`` looks a program up here before lowering it. The key hashes the printed Jaxpr (its
literals print exactly: the shortest repr that round-trips), the bytes of every constant (also
those closed over by sub-Jaxprs in parameters), the source of the lowering stages, the
compiler's version, the flags and the CPU. An entry is a JSON file naming the shared object
(which ``cache.py`` keys by the generated source and checks against its SHA-256 sidecar) with
what the runtime needs to call it, plus an ``.npz`` of the program's constants. A Jaxpr whose
printout is not faithful (NumPy's ``...`` summarisation, an object printed by address) is not
indexed; a missing, unreadable or inconsistent entry is a miss, and the program is compiled the
slow way and the entry rewritten.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re

import numpy as np

from functx import dtypes  # noqa: F401  (registers bfloat16's name with NumPy)
from functx.core import ClosedJaxpr, Jaxpr

_STAGES = ("loops.py", "schedule.py", "cpp.py", "prelude.py", "compile.py", "runtime.py",
           "cache.py", "program_cache.py")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


@functools.lru_cache(maxsize=1)
def _stages_digest() -> str:
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _STAGES:
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _consts(obj, out: list):
    """The constants of ``obj`` and of every ClosedJaxpr in its equations' parameters."""
    if isinstance(obj, ClosedJaxpr):
        out.extend(obj.consts)
        _consts(obj.jaxpr, out)
    elif isinstance(obj, Jaxpr):
        for eqn in obj.eqns:
            for v in eqn.params.values():
                _consts(v, out)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _consts(v, out)


def key_of(closed: ClosedJaxpr) -> str | None:
    """The index key of ``closed``, or None when its printout does not identify it."""
    from functx.lowering import cache

    text = str(closed)
    if "..." in text or _ADDRESS.search(text):
        return None
    h = hashlib.sha256()
    for part in (text, _stages_digest(), cache.compiler_id(), " ".join(cache.FLAGS + cache.LIBS),
                 cache.cpu_id()):
        h.update(part.encode())
        h.update(b"\0")
    consts: list = []
    _consts(closed, consts)
    for c in consts:
        a = np.asarray(c)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:32]


def _paths(key: str) -> tuple[str, str]:
    from functx.lowering import cache

    d = os.path.join(cache.cache_dir(), "programs")
    return os.path.join(d, f"{key}.json"), os.path.join(d, f"{key}.npz")


def load(key: str, closed: ClosedJaxpr):
    """The Executable stored under ``key``, or None."""
    from functx.lowering import cache, runtime

    meta_path, npz_path = _paths(key)
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        so = os.path.join(cache.cache_dir(), meta["so"])
        if not cache._valid(so):
            return None
        with np.load(npz_path, allow_pickle=False) as z:
            consts = [z[f"c{i}"] for i in range(meta["n_consts"])]
        source = cache.read_source(so)
        out_specs = [(tuple(s), np.dtype(d)) for s, d in meta["out_specs"]]
        in_dtypes = [np.dtype(d) for d in meta["in_dtypes"]] or None
        if len(out_specs) != len(closed.out_avals):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    out_map = [("buf", i, aval) for i, aval in enumerate(closed.out_avals)]
    return runtime.Executable(so, meta["n_in"], consts, out_specs, out_map, source,
                              meta["kernels_text"], in_dtypes=in_dtypes)


def store(key: str, exe) -> None:
    """Record ``exe`` (a just-compiled Executable) under ``key``; atomic, best effort."""
    meta_path, npz_path = _paths(key)
    meta = {"so": os.path.basename(exe.so_path), "n_in": exe.n_in,
            "n_consts": len(exe.consts),
            "out_specs": [[list(s), np.dtype(d).name] for s, d in exe.out_specs],
            "in_dtypes": [np.dtype(d).name for d in exe.in_dtypes or ()],
            "kernels_text": exe.kernels_text}
    try:
        os.makedirs(os.path.dirname(meta_path), exist_ok=True)
        tmp = f"{npz_path}.{os.getpid()}.tmp.npz"
        np.savez(tmp, **{f"c{i}": c for i, c in enumerate(exe.consts)})
        os.replace(tmp, npz_path)
        tmp = f"{meta_path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(meta, f)
        os.replace(tmp, meta_path)
    except OSError:
        pass  # a read-only cache: the next process compiles (or finds the .so) again
