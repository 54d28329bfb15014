"""A disk index from a final Jaxpr to its compiled C++ program, so that a warm process skips
lowering, scheduling and code generation (and never imports the loop IR).

``compile.py`` looks a program up here before lowering it. The key hashes the printed Jaxpr (its
literals print exactly: the shortest repr that round-trips), the bytes of every constant (also
those closed over by sub-Jaxprs in parameters), the source of the lowering stages, the
compiler's version, the flags and the CPU. An entry is a JSON file naming the shared object
(which ``cache.py`` keys by the generated source and checks against its SHA-256 sidecar) with
what the runtime needs to call it, plus an ``.npz`` of the program's constants. A Jaxpr whose
printout is not faithful (NumPy's ``...`` summarisation, an object printed by address) is not
indexed; a missing, unreadable or inconsistent entry is a miss, and the program is compiled the
slow way and the entry rewritten.

An entry is checked against the Jaxpr before anything of it runs: its key, the number and dtypes
of the inputs, the shape and dtype of every output (the kernel writes that many bytes), the
constants' shapes, dtypes and bytes (their SHA-256), and the shared object: a bare file name of
the cache directory (no path) whose SHA-256 is the one recorded when the entry was written, so
an entry naming another program's object (or one outside the cache) is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import zipfile

import numpy as np

from functx import dtypes  # noqa: F401  (registers bfloat16's name with NumPy)
from functx.core import ClosedJaxpr, Jaxpr
from functx.lowering import runtime
from functx.transforms import attention  # (whether a miss fuses attention: compile.py)

_STAGES = (  # files, or packages (every .py file in them, by name)
    "rules.py",
    "loopir.py",
    "lower.py",
    "schedule.py",
    "cpp",
    "compile.py",
    "runtime.py",
    "cache.py",
    "program_cache.py",
    "../control",  # (the control-flow primitives' lowering rules live there)
    "../primitives",  # (the elementwise table's C++ spellings, the special functions' rules)
    "../transforms/attention.py",  # (compile.py fuses attention on a miss: after the key)
)
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_SO_NAME = re.compile(r"[0-9a-f]{32}\.so\Z")


def _stage_files() -> list[str]:
    """The source files whose text is part of every key (paths relative to this folder)."""
    here = os.path.dirname(os.path.abspath(__file__))
    names = []
    for stage in _STAGES:
        path = os.path.join(here, stage)
        if os.path.isdir(path):
            names += [os.path.join(stage, n) for n in sorted(os.listdir(path)) if n.endswith(".py")]
        else:
            names.append(stage)
    return names


@functools.lru_cache(maxsize=1)
def _stages_digest() -> str:
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _stage_files():
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
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    text = str(closed) + ("" if attention.ENABLED else "\n(attention unfused)")
    if "..." in text or _ADDRESS.search(text):
        return None
    h = hashlib.sha256()
    for part in (
        text,
        _stages_digest(),
        cache.compiler_id(),
        " ".join(cache.FLAGS + cache.LIBS),
        cache.cpu_id(),
    ):
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
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    d = cache.subdir("programs")
    return os.path.join(d, f"{key}.json"), os.path.join(d, f"{key}.npz")


def _consts_digest(consts) -> str:
    h = hashlib.sha256()
    for c in consts:
        a = np.ascontiguousarray(c)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _specs(avals) -> list:
    return [[[int(n) for n in a.shape], np.dtype(a.dtype).name] for a in avals]


def load(key: str, closed: ClosedJaxpr):
    """The Executable stored under ``key``, or None (also for an entry that does not agree with
    ``closed``: see the module's docstring)."""
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    try:
        meta_path, npz_path = _paths(key)
        meta = json.loads(cache.read_file(meta_path))
        if meta["key"] != key or not isinstance(meta["so"], str) or not _SO_NAME.match(meta["so"]):
            return None
        in_avals, out_avals = closed.in_avals, closed.out_avals
        if meta["n_in"] != len(in_avals) or meta["out_specs"] != _specs(out_avals):
            return None
        if meta["in_dtypes"] != [np.dtype(a.dtype).name for a in in_avals]:
            return None
        so = os.path.join(cache.cache_dir(), meta["so"])
        if cache.valid_digest(so) != meta["so_sha256"]:
            return None
        with np.load(io.BytesIO(cache.read_file(npz_path)), allow_pickle=False) as z:
            if sorted(z.files) != sorted(f"c{i}" for i in range(len(meta["consts"]))):
                return None
            consts = [z[f"c{i}"] for i in range(len(meta["consts"]))]
        if [[list(c.shape), c.dtype.name] for c in consts] != meta["consts"] or _consts_digest(
            consts
        ) != meta["consts_sha256"]:
            return None
        source = cache.read_source(so)
        if "fx_own_sgemm" in source:  # (its products call cpp/gemm.py's library once loaded)
            from functx.lowering.cpp import gemm

            gemm.start_build()
        out_specs = [(tuple(a.shape), np.dtype(a.dtype)) for a in out_avals]
        in_dtypes = [np.dtype(a.dtype) for a in in_avals] or None
        kernels_text = str(meta["kernels_text"])
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        EOFError,
        zipfile.BadZipFile,
        UnicodeDecodeError,
    ):
        return None
    out_map = [("buf", i, aval) for i, aval in enumerate(out_avals)]
    return runtime.Executable(
        so, len(in_avals), consts, out_specs, out_map, source, kernels_text, in_dtypes=in_dtypes
    )


def store(key: str, exe, closed: ClosedJaxpr | None = None) -> None:
    """Record ``exe`` (a just-compiled Executable) under ``key``; atomic, best effort. Nothing
    is recorded for an executable whose shared object is not in the cache directory (compiled in
    the private one), that has host steps, or whose inputs and outputs do not agree with
    ``closed``."""
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    try:
        if os.path.dirname(exe.so_path) != cache.cache_dir():
            return
        if getattr(exe, "host", None) is not None:
            return  # host steps (library steps of lax.linalg) are Python callables: not stored
        meta = {
            "key": key,
            "so": os.path.basename(exe.so_path),
            "so_sha256": cache.valid_digest(exe.so_path),
            "n_in": exe.n_in,
            "consts": [[list(np.shape(c)), np.asarray(c).dtype.name] for c in exe.consts],
            "consts_sha256": _consts_digest(exe.consts),
            "out_specs": [[[int(n) for n in s], np.dtype(d).name] for s, d in exe.out_specs],
            "in_dtypes": [np.dtype(d).name for d in exe.in_dtypes or ()],
            "kernels_text": exe.kernels_text,
        }
        if meta["so_sha256"] is None or not _SO_NAME.match(meta["so"]):
            return
        if closed is not None and (
            meta["n_in"] != len(closed.in_avals)
            or meta["out_specs"] != _specs(closed.out_avals)
            or meta["in_dtypes"] != [np.dtype(a.dtype).name for a in closed.in_avals]
        ):
            return  # (it would never load)
        meta_path, npz_path = _paths(key)
        buf = io.BytesIO()
        np.savez(buf, **{f"c{i}": c for i, c in enumerate(exe.consts)})
        cache.write_file(npz_path, buf.getvalue())
        cache.write_file(meta_path, json.dumps(meta).encode())
    except OSError:
        pass  # a read-only cache: the next process compiles (or finds the .so) again
